"""`cancel_and_wait` ends a task even when the task swallowed its first cancellation."""

from __future__ import annotations

import asyncio

from skyward.client.cancelling import cancel_and_wait


def test_a_task_that_swallows_its_cancellation_is_cancelled_again_until_it_ends() -> None:
    reached: list[str] = []

    async def stubborn() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            reached.append("swallowed")  # as 3.11's wait_for may, when its inner future completes
        await asyncio.Event().wait()  # what it awaits next never comes

    async def main() -> None:
        task = asyncio.ensure_future(stubborn())
        await asyncio.sleep(0)
        await asyncio.wait_for(cancel_and_wait([task]), timeout=5)
        assert task.cancelled()

    asyncio.run(main())
    assert reached == ["swallowed"]


def test_what_a_cancelled_task_raised_is_retrieved() -> None:
    async def fails() -> None:
        raise ValueError("gone wrong")

    async def main() -> asyncio.Task[None]:
        task = asyncio.ensure_future(fails())
        await asyncio.sleep(0)
        await cancel_and_wait([task])
        return task

    task = asyncio.run(main())
    assert isinstance(task.exception(), ValueError)
