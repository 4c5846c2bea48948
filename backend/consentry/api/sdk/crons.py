"""The LangGraph SDK's crons (``client.crons.create``, ``create_for_thread``, ``update``,
``search``, ``count``, ``delete``): the caller's schedules of runs. Each tick starts an ordinary
run, queued in its thread's run queue (``runtime.crons``); the run it starts is checked here as
a run request is when the cron is created or changed, so that a cron that could never run is
refused then (422, 404), not at each tick."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Response
from pydantic import ValidationError

from consentry.api.chat_requests import not_a_run_request
from consentry.api.http.deps import (
    AssistantsDep,
    CronsDep,
    PrincipalDep,
    ThreadsDep,
    ThreadWriterDep,
    WebhookHostsDep,
)
from consentry.api.http.responses import ERROR_RESPONSES
from consentry.api.sdk._ids import SDK_ID
from consentry.api.sdk._run_request import RunRequestMaker
from consentry.errors import InvalidRequestError
from consentry.principal import Principal
from consentry.runtime.crons import CronPlan
from consentry.schemas.sdk_crons import (
    CRON_FIELDS,
    Cron,
    CronCountRequest,
    CronCreate,
    CronSearchRequest,
    CronUpdate,
)
from consentry.schemas.sdk_runs import RunCreate

__all__ = ["router"]

router = APIRouter(tags=["langgraph-sdk"], responses=ERROR_RESPONSES)


async def _run_requests(
    owner: PrincipalDep,
    threads: ThreadsDep,
    writer: ThreadWriterDep,
    assistants: AssistantsDep,
    hosts: WebhookHostsDep,
) -> RunRequestMaker:
    return RunRequestMaker(owner, threads, writer, assistants, hosts)


RunRequestsDep = Annotated[RunRequestMaker, Depends(_run_requests)]


@router.post("/runs/crons")
async def create_cron(
    body: CronCreate,
    owner: PrincipalDep,
    crons: CronsDep,
    requests: RunRequestsDep,
) -> Cron:
    """A cron whose every tick starts its run on a new thread (deleted once the run has ended,
    unless `on_run_completed` is `keep` or a consent waits on it)."""
    return await _create(body, None, owner, crons, requests)


@router.post("/threads/{thread_id}/runs/crons")
async def create_thread_cron(
    thread_id: str,
    body: CronCreate,
    owner: PrincipalDep,
    crons: CronsDep,
    requests: RunRequestsDep,
) -> Cron:
    """A cron whose every tick starts its run on the thread, after its active run if it has
    one. A tick while a consent waits on the thread is skipped (audited `cron_tick_skipped`)."""
    return await _create(body, thread_id, owner, crons, requests)


@router.patch(f"/runs/crons/{{cron_id:{SDK_ID}}}")
async def update_cron(
    cron_id: str,
    body: CronUpdate,
    owner: PrincipalDep,
    crons: CronsDep,
    requests: RunRequestsDep,
) -> Cron:
    """Change the cron: a change of its schedule, time zone, end or `enabled` plans its next tick
    again from now (`timezone: null` is UTC, `end_time: null` no end); a run's field replaces
    the one its runs start with."""
    current = await crons.get(owner, cron_id)
    sent = body.model_dump(mode="json", exclude_unset=True)
    run_changes = {k: v for k, v in sent.items() if k not in CRON_FIELDS}
    payload = None
    if run_changes:
        payload = {**current.payload, **run_changes}
        await _check_run(requests, payload, on_thread=current.thread_id is not None)
    if "schedule" in sent and body.schedule is None:
        raise InvalidRequestError(
            "A cron's `schedule` cannot be cleared: send another, or `enabled: false`.",
            code="request_invalid",
            details={"field": "schedule"},
        )
    before = CronPlan(current.schedule, current.timezone, current.end_time, current.enabled)
    after = CronPlan(
        schedule=body.schedule or current.schedule,
        timezone=body.timezone if "timezone" in sent else current.timezone,
        end_time=body.end_time if "end_time" in sent else current.end_time,
        enabled=current.enabled if body.enabled is None else body.enabled,
    )
    plan = None if after == before else after  # (unchanged: a due tick stays due)
    return await crons.update(
        owner,
        cron_id,
        plan=plan,
        payload=payload,
        on_run_completed=body.on_run_completed,
        **({"metadata": body.metadata} if "metadata" in sent else {}),
    )


@router.delete(f"/runs/crons/{{cron_id:{SDK_ID}}}", status_code=204)
async def delete_cron(cron_id: str, owner: PrincipalDep, crons: CronsDep) -> Response:
    """Delete the cron: no tick after this; a run it started goes on."""
    await crons.delete(owner, cron_id)
    return Response(status_code=204)


@router.post("/runs/crons/search")
async def search_crons(
    body: CronSearchRequest, owner: PrincipalDep, crons: CronsDep
) -> list[dict[str, Any]]:
    """The caller's crons that match every filter (each a `Cron`; with `select`, only those
    fields, `now` being the server's time)."""
    found = await crons.search(
        owner,
        assistant_id=body.assistant_id,
        thread_id=body.thread_id,
        enabled=body.enabled,
        metadata=body.metadata or {},
        limit=body.limit,
        offset=body.offset,
        order_by=body.sort_by or "created_at",
        descending=(body.sort_order or "desc") == "desc",
    )
    chosen: set[str] | None = set(body.select) if body.select else None
    answers = []
    for cron in found:
        answer = cron.model_dump(mode="json", include=chosen)
        if chosen is not None and "now" in chosen:
            answer["now"] = crons.now().isoformat()
        answers.append(answer)
    return answers


@router.post("/runs/crons/count")
async def count_crons(body: CronCountRequest, owner: PrincipalDep, crons: CronsDep) -> int:
    """How many of the caller's crons `search` finds with these filters."""
    return await crons.count(
        owner,
        assistant_id=body.assistant_id,
        thread_id=body.thread_id,
        metadata=body.metadata or {},
    )


async def _create(
    body: CronCreate,
    thread_id: str | None,
    owner: Principal,
    crons: CronsDep,
    requests: RunRequestMaker,
) -> Cron:
    payload = body.model_dump(mode="json", exclude_unset=True, exclude=CRON_FIELDS)
    await _check_run(requests, payload, on_thread=thread_id is not None)
    return await crons.create(
        owner,
        plan=CronPlan(body.schedule, body.timezone, body.end_time, body.enabled),
        assistant_id=body.assistant_id,
        thread_id=thread_id,
        payload=payload,
        metadata=body.metadata,
        on_run_completed=body.on_run_completed,
    )


async def _check_run(
    requests: RunRequestMaker, payload: dict[str, Any], *, on_thread: bool
) -> None:
    """The run a cron's ticks would start, refused as its request would be (422, 404)."""
    try:
        run = RunCreate.model_validate(payload)
    except ValidationError as exc:
        raise not_a_run_request(exc) from None
    await requests.check_scheduled(run, on_thread=on_thread)
