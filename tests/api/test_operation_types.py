"""An operation's request and response types come from its handler's annotations."""

from __future__ import annotations

import msgspec

from dutyline.api.operation import Context, Download, Empty, Router


class Ask(msgspec.Struct):
    q: str


class Answer(msgspec.Struct):
    a: str


def test_types_are_read_from_the_annotations() -> None:
    router = Router("t")

    @router.post("/t/answer")
    async def answer(ctx: Context, req: Ask) -> Answer:
        return Answer(a=req.q)

    @router.post("/t/none")
    async def nothing(ctx: Context) -> None:
        return None

    @router.post("/t/file")
    async def file(ctx: Context, req: Ask) -> Download:
        return Download("f.csv", "a\n")

    by_path = {op.path: (op.request_type, op.response_type) for op in router.operations}
    assert by_path == {"/t/answer": (Ask, Answer), "/t/none": (Empty, None),
                       "/t/file": (Ask, str)}


def test_a_factory_handler_names_its_response_in_the_decorator() -> None:
    router = Router("t")

    @router.post("/t/any", response=Answer)
    async def anything(ctx: Context, req: Ask) -> object:
        return Answer(a="x")

    [op] = router.operations
    assert (op.request_type, op.response_type) == (Ask, Answer)
