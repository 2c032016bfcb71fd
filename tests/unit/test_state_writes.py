"""Every write of a step's or a lead's state asks domain/states.py first.

Read from the source of the service layer: a function that writes a step state (an UPDATE of
the steps table with `state`, `step.state = ...`, a new `m.Step(state=...)`) or a lead's reply
state (`.values(reply_state=...)`, `lead.reply_state = ...`) must also call one of the state
table's questions — `check_step_move`, `step_move`, `check_reply_move`, `reply_move`,
`first_step_state` — or the one module that writes a step back into the queue
(service_layer/steps.py: `back_in_queue`, `put_back`), or a fenced claim's `to` (which calls
`step_move`). A lead is born `active` without a move."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tests.unit.test_layers import PACKAGE

ASKS = {
    "check_step_move",
    "step_move",
    "check_reply_move",
    "reply_move",
    "first_step_state",
    "back_in_queue",
    "put_back",
    "to",
}
STEP_TABLES = {"S", "_S", "m.Step", "Step"}


def _own_nodes(fn: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function that are not inside a function nested in it."""
    for child in ast.iter_child_nodes(fn):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        yield child
        yield from _own_nodes(child)


def _updated_table(call: ast.Call) -> str | None:
    """`update(X)....values(...)`: X."""
    node: ast.AST = call.func
    while isinstance(node, ast.Attribute | ast.Call):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id == "update" and node.args:
                return ast.unparse(node.args[0])
            node = node.func
        else:
            node = node.value
    return None


def _writes(fn: ast.AST) -> list[str]:
    found = []
    for node in _own_nodes(fn):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for t in target.elts if isinstance(target, ast.Tuple) else [target]:
                    if not isinstance(t, ast.Attribute):
                        continue
                    if t.attr == "reply_state" or (
                        t.attr == "state" and "step" in ast.unparse(t.value).lower()
                    ):
                        found.append(f"{node.lineno}: {ast.unparse(t)} = ...")
        elif isinstance(node, ast.Call):
            keywords = {k.arg: k.value for k in node.keywords}
            name = ast.unparse(node.func)
            if isinstance(node.func, ast.Attribute) and node.func.attr == "values":
                table = _updated_table(node)
                if "reply_state" in keywords or (
                    table in STEP_TABLES and ("state" in keywords or None in keywords)
                ):
                    found.append(f"{node.lineno}: update({table}).values(state...)")
            elif name == "m.Step" and "state" in keywords:
                found.append(f"{node.lineno}: m.Step(state=...)")
            elif (
                name == "m.Lead"
                and "reply_state" in keywords
                and ast.unparse(keywords["reply_state"]) != "ReplyState.ACTIVE"
            ):
                found.append(f"{node.lineno}: m.Lead(reply_state=...)")
    return found


def _asks(fn: ast.AST) -> bool:
    for node in _own_nodes(fn):
        if isinstance(node, ast.Call):
            func = node.func
            name = (
                func.attr
                if isinstance(func, ast.Attribute)
                else func.id
                if isinstance(func, ast.Name)
                else ""
            )
            if name in ASKS:
                return True
    return False


def offences(source: str, where: str = "<source>") -> list[str]:
    found = []
    for fn in ast.walk(ast.parse(source)):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            writes = _writes(fn)
            if writes and not _asks(fn):
                found += [f"{where}:{fn.name}:{w}" for w in writes]
    return found


def test_every_state_write_of_the_service_layer_asks_the_state_table() -> None:
    found = []
    for path in sorted((PACKAGE / "service_layer").rglob("*.py")):
        found += offences(path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE)))
    assert found == []


PLANTED = [
    # the approval that skipped the table (rescue/actions.py before)
    "def approve(uow, step):\n    step.state = StepState.SCHEDULED\n",
    # a claim taken back by hand (inbound/replies.py before)
    "def pause(step):\n    step.state, step.claim_token = StepState.SCHEDULED, None\n",
    "def f(conn):\n    conn.execute(update(S).where(S.c.id == 1).values(state=StepState.SENT))\n",
    "def f(conn, values):\n    conn.execute(update(m.Step).where(m.Step.id == 1).values(**values))\n",
    "def f(conn):\n    conn.execute(update(L).values(reply_state=ReplyState.ACTIVE))\n",
    "def f(lead):\n    lead.reply_state = ReplyState.STOPPED\n",
    "def f(uow):\n    uow.session.add(m.Step(state=StepState.SCHEDULED))\n",
]


def test_each_planted_raw_write_is_found() -> None:
    for source in PLANTED:
        assert offences(source), source


def test_the_same_writes_asking_first_pass() -> None:
    asked = [
        "def approve(uow, step):\n    check_step_move(step.state, StepState.SCHEDULED)\n"
        "    step.state = StepState.SCHEDULED\n",
        "def f(uow):\n    uow.session.add(m.Step(state=first_step_state(needs_approval=False)))\n",
        "def f(uow):\n    uow.session.add(m.Lead(reply_state=ReplyState.ACTIVE))\n",  # born active
        "def f(conn):\n    conn.execute(update(E).values(state='completed'))\n",  # an enrollment
    ]
    for source in asked:
        assert offences(source) == [], source
