"""The pipeline floor stays as easy to read as the Trainer (issue 87): no function in
pipeline/ over 80 lines or with more than 6 parameters, unless a comment on the line above
it says why (a signature that mirrors a command's flags one for one)."""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
MAX_LINES, MAX_PARAMETERS = 80, 6


def long_or_wide_functions(folder: pathlib.Path) -> list:
    """(file, function, lines, parameters) of each function past a limit without a comment
    above it (its decorators included)."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        source = path.read_text()
        lines = source.splitlines()
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            args = node.args
            named = args.posonlyargs + args.args + args.kwonlyargs
            parameters = [a.arg for a in named if a.arg not in ("self", "cls")]
            parameters += ["*"] * bool(args.vararg) + ["**"] * bool(args.kwarg)
            first = min([d.lineno for d in node.decorator_list] + [node.lineno])
            length = (node.end_lineno or node.lineno) - first + 1
            explained = first >= 2 and lines[first - 2].strip().startswith("#")
            if (length > MAX_LINES or len(parameters) > MAX_PARAMETERS) and not explained:
                found.append((str(path.relative_to(folder)), node.name, length, len(parameters)))
    return found


def test_no_function_in_the_pipeline_floor_is_long_or_wide_without_saying_why():
    assert long_or_wide_functions(ROOT / "pipeline") == []


def test_the_check_finds_a_long_function_and_a_wide_one(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "long.py").write_text(f"def long():\n{body}\n")
    (tmp_path / "wide.py").write_text("def wide(a, b, c, d, e, f, g):\n    pass\n")
    (tmp_path / "said.py").write_text(
        "# Mirrors a command's flags.\ndef said(a, b, c, d, e, f, g):\n    pass\n"
    )
    found = long_or_wide_functions(tmp_path)
    assert [(name, length > MAX_LINES, count) for _, name, length, count in found] == [
        ("long", True, 0),
        ("wide", False, 7),
    ]
