"""The kubeflow target's Kubernetes platform spec: what a Kubeflow Pipelines 2 cluster gives
each step's pod beyond its image, built with kfp-kubernetes' own protos (the
`KubernetesExecutorConfig` its `use_secret_as_env`, `add_toleration` and `add_node_selector`
write) and compiled into the job beside its pipeline spec (`platformSpec`), which `submit`
sends as the pipeline's second YAML document, as the KFP SDK's compiler writes it.

From the settings (pipeline/cloud.py, one home):
- KUBERNETES_SECRET_ENV="SECRET/KEY=ENV,...": environment variables from Kubernetes secrets,
  in every step (the tracking server's or storage's credentials);
- TRAINER_NODE_SELECTOR="LABEL=VALUE,..." and TRAINER_TOLERATIONS="KEY[=VALUE]:EFFECT,...":
  where the Trainer's and Tuner's pods may be scheduled (an accelerator pool's labels and
  taints, such as `cloud.google.com/gke-accelerator=nvidia-l4` and `nvidia.com/gpu:NoSchedule`);
- KUBERNETES_SERVICE_ACCOUNT: the service account the run's pods run as (a run's setting, not a
  pod's: `submit` sends it).

What the backend does with them, by release: secrets as environment variables and node
selectors from 2.0, tolerations from 2.1 (`backend/src/v2/driver`).
"""

import dataclasses
import re
from typing import Dict, List, Mapping, Tuple

# Kubernetes' own rules: a secret's name is a DNS subdomain, a data key letters, digits, "-",
# "_" and "."; a label key an optional DNS-subdomain prefix and a name; a taint effect one of
# three.
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
SECRET_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
LABEL_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?)$")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# The tasks whose pods the Trainer's settings go to.
TRAINING_TASKS = ("Trainer", "Tuner")


def label_key_ok(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    return (not prefix or bool(DNS_SUBDOMAIN.match(prefix))) and bool(
        LABEL_NAME.match(name) and len(name) <= 63
    )


@dataclasses.dataclass(frozen=True)
class PodSettings:
    """The pod settings, parsed and checked as the Kubernetes API server would."""

    secret_env: Tuple[Tuple[str, str, str], ...] = ()  # (secret, key, variable)
    node_selector: Tuple[Tuple[str, str], ...] = ()  # (label, value)
    tolerations: Tuple[Tuple[str, str, str, str], ...] = ()  # (key, operator, value, effect)
    service_account: str = ""

    @classmethod
    def of(cls, cloud) -> "PodSettings":
        """`cloud`'s settings (a CloudConfig); a ValueError naming the variable and the entry
        for what a cluster would refuse."""
        return cls(
            secret_env=tuple(parse_secret_env(cloud.secret_env)),
            node_selector=tuple(parse_node_selector(cloud.trainer_node_selector)),
            tolerations=tuple(parse_tolerations(cloud.trainer_tolerations)),
            service_account=check_service_account(cloud.kubernetes_service_account),
        )

    def executor_config(self, task: str) -> dict:
        """The KubernetesExecutorConfig of `task`'s pod, as JSON ({} when it has none)."""
        from google.protobuf import json_format
        from kfp.kubernetes import kubernetes_executor_config_pb2 as pb

        config = pb.KubernetesExecutorConfig()
        by_secret: Dict[str, List[Tuple[str, str]]] = {}
        for secret, key, variable in self.secret_env:
            by_secret.setdefault(secret, []).append((key, variable))
        for secret, pairs in sorted(by_secret.items()):
            entry = config.secret_as_env.add(secret_name=secret)
            # Both spellings: older backends read the name, newer ones the parameter.
            entry.secret_name_parameter.runtime_value.constant.string_value = secret
            for key, variable in pairs:
                entry.key_to_env.add(secret_key=key, env_var=variable)
        if task in TRAINING_TASKS:
            if self.node_selector:
                config.node_selector.labels.update(dict(self.node_selector))
            for key, operator, value, effect in self.tolerations:
                config.tolerations.add(key=key, operator=operator, value=value, effect=effect)
        return json_format.MessageToDict(config)

    def platform_spec(self, job: dict) -> dict:
        """The PlatformSpec of the compiled `job` (its executors' configs under
        `platforms.kubernetes.deploymentSpec`), checked against KFP's PlatformSpec proto;
        {} when no pod gets anything."""
        from google.protobuf import json_format
        from kfp.pipeline_spec import pipeline_spec_pb2

        spec = job["pipelineSpec"]
        executors = {}
        for name, task in sorted(spec["root"]["dag"]["tasks"].items()):
            label = spec["components"][task["componentRef"]["name"]]["executorLabel"]
            config = self.executor_config(name)
            if config:
                executors[label] = config
        if not executors:
            return {}
        platform = {"platforms": {"kubernetes": {"deploymentSpec": {"executors": executors}}}}
        json_format.ParseDict(platform, pipeline_spec_pb2.PlatformSpec())  # KFP's own check
        return platform


def entries(text: str) -> List[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def parse_secret_env(text: str) -> List[Tuple[str, str, str]]:
    """KUBERNETES_SECRET_ENV's "SECRET/KEY=ENV,..." as (secret, key, variable)."""
    found = []
    for entry in entries(text):
        source, _, variable = entry.partition("=")
        secret, _, key = source.partition("/")
        if not (DNS_SUBDOMAIN.match(secret) and len(secret) <= 253):
            problem = f"{secret!r} is not a Kubernetes secret's name (lower-case DNS subdomain)"
        elif not SECRET_KEY.match(key):
            problem = f"{key!r} is not a key of a secret's data"
        elif not ENV_NAME.match(variable):
            problem = f"{variable!r} is not an environment variable's name"
        else:
            found.append((secret, key, variable))
            continue
        raise ValueError(f"KUBERNETES_SECRET_ENV entry {entry!r}: {problem}; SECRET/KEY=ENV")
    variables = [v for _, _, v in found]
    if len(set(variables)) != len(variables):
        raise ValueError(f"KUBERNETES_SECRET_ENV sets a variable twice: {variables}")
    return found


def parse_node_selector(text: str) -> List[Tuple[str, str]]:
    """TRAINER_NODE_SELECTOR's "LABEL=VALUE,..." as (label, value)."""
    found = []
    for entry in entries(text):
        key, equals, value = entry.partition("=")
        if not equals or not label_key_ok(key) or not LABEL_VALUE.match(value) or len(value) > 63:
            raise ValueError(
                f"TRAINER_NODE_SELECTOR entry {entry!r} is not a Kubernetes label: LABEL=VALUE, "
                "such as cloud.google.com/gke-accelerator=nvidia-l4"
            )
        found.append((key, value))
    return found


def parse_tolerations(text: str) -> List[Tuple[str, str, str, str]]:
    """TRAINER_TOLERATIONS's "KEY[=VALUE]:EFFECT,..." as (key, operator, value, effect):
    Equal with a value, Exists without."""
    found = []
    for entry in entries(text):
        taint, _, effect = entry.rpartition(":")
        key, equals, value = taint.partition("=")
        if (
            not label_key_ok(key)
            or effect not in EFFECTS
            or (equals and not LABEL_VALUE.match(value))
        ):
            raise ValueError(
                f"TRAINER_TOLERATIONS entry {entry!r} is not a toleration: KEY[=VALUE]:EFFECT, "
                f"the effect one of {', '.join(EFFECTS)} (such as nvidia.com/gpu:NoSchedule)"
            )
        found.append((key, "Equal" if equals else "Exists", value, effect))
    return found


def check_service_account(name: str) -> str:
    if name and not (DNS_SUBDOMAIN.match(name) and len(name) <= 253):
        raise ValueError(
            f"KUBERNETES_SERVICE_ACCOUNT={name!r} is not a Kubernetes service account's name"
        )
    return name


def secret_environment(platform: Mapping, executor_label: str) -> List[Tuple[str, str, str]]:
    """(secret, key, variable) of each variable `executor_label`'s pod gets from a secret in a
    compiled platform spec."""
    executors = (
        platform.get("platforms", {})
        .get("kubernetes", {})
        .get("deploymentSpec", {})
        .get("executors", {})
    )
    found = []
    for entry in executors.get(executor_label, {}).get("secretAsEnv", []):
        for pair in entry.get("keyToEnv", []):
            found.append((entry["secretName"], pair["secretKey"], pair["envVar"]))
    return found
