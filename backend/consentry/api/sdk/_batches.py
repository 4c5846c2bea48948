"""``runs.create_batch``: each run of a batch on a new thread, as ``runs.create(None, ...)``
starts one (``RunStart.create``), in order, every one checked before any starts."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

from consentry.api.sdk._start import RunStart
from consentry.errors import ConsentryError
from consentry.runtime.runs import ActiveRun, Queued
from consentry.schemas.sdk_runs import RunCreate

__all__ = ["start_batch"]


async def start_batch(
    start: RunStart, bodies: list[RunCreate], *, route: str
) -> list[ActiveRun | Queued]:
    """Every run checked first (``RunStart.check_threadless``). A refusal only a start tells
    stops the batch there, its ``details.started`` naming the runs before it. Under an
    ``Idempotency-Key`` each run is keyed by it and its place, its fingerprint the whole batch's
    (``route``)."""
    for body in bodies:
        await start.check_threadless(body)
    batch = start.idempotency_key
    digest = hashlib.sha256(batch.encode()).hexdigest()[:40] if batch else None
    dumped = [body.model_dump(mode="json") for body in bodies]
    whole = hashlib.sha256(json.dumps(dumped, sort_keys=True).encode())
    route = f"{route}#{len(bodies)}:{whole.hexdigest()[:32]}"
    started: list[ActiveRun | Queued] = []
    for index, body in enumerate(bodies):
        key = f"batch:{digest}:{index}" if digest else None  # within the keys' 255 chars
        try:
            one = replace(start, idempotency_key=key)
            started.append(await one.create(body, None, route=route))
        except ConsentryError as exc:
            runs = [{"thread_id": r.thread_id, "run_id": r.run_id} for r in started]
            exc.details = {**exc.details, "started": runs}
            raise
    return started
