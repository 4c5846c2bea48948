"""Projects, notes, versions and full-text search over HTTP, as a client sees them."""

from __future__ import annotations

from typing import Any
from uuid import uuid4

import httpx


async def _project(client: httpx.AsyncClient, name: str = "Learning") -> str:
    response = await client.post("/v1/projects", json={"name": name})
    assert response.status_code == 201, response.text
    return str(response.json()["project_id"])


async def _note(
    client: httpx.AsyncClient, project_id: str, *, title: str, content: str
) -> dict[str, Any]:
    response = await client.post(
        f"/v1/projects/{project_id}/notes", json={"title": title, "content": content}
    )
    assert response.status_code == 201, response.text
    note: dict[str, Any] = response.json()
    return note


async def _search(client: httpx.AsyncClient, project_id: str, q: str) -> list[dict[str, Any]]:
    response = await client.get(f"/v1/projects/{project_id}/search", params={"q": q})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["query"] == q
    hits: list[dict[str, Any]] = body["hits"]
    return hits


def _error_code(response: httpx.Response) -> str:
    return str(response.json()["error"]["code"])


# Projects


async def test_the_default_project_is_created_on_the_first_list_and_only_once(
    client: httpx.AsyncClient,
) -> None:
    first = await client.get("/v1/projects")
    second = await client.get("/v1/projects")

    assert first.status_code == 200
    projects = first.json()["projects"]
    assert [(p["name"], p["is_default"]) for p in projects] == [("My notes", True)]
    assert second.json() == first.json()


async def test_a_created_project_is_listed_next_to_the_default_one(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post("/v1/projects", json={"name": "Learning"})

    assert response.status_code == 201
    created = response.json()
    assert (created["name"], created["is_default"]) == ("Learning", False)
    projects = (await client.get("/v1/projects")).json()["projects"]
    assert [(p["name"], p["is_default"]) for p in projects] == [
        ("Learning", False),
        ("My notes", True),
    ]
    assert projects[0] == created


async def test_a_project_with_an_empty_name_is_refused(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/projects", json={"name": ""})

    assert response.status_code == 422
    assert _error_code(response) == "request_invalid"
    assert (await client.get("/v1/projects")).json()["projects"][0]["name"] == "My notes"


# Notes


async def test_a_created_note_starts_at_version_one_and_is_listed_in_its_project(
    client: httpx.AsyncClient,
) -> None:
    project_id = await _project(client)
    other_project_id = await _project(client, "Other")

    note = await _note(client, project_id, title="RAG", content="Retrieval uses documents.")

    assert (note["project_id"], note["title"], note["content"], note["version"]) == (
        project_id,
        "RAG",
        "Retrieval uses documents.",
        1,
    )
    fetched = (await client.get(f"/v1/notes/{note['note_id']}")).json()
    assert fetched == note
    listed = (await client.get(f"/v1/projects/{project_id}/notes")).json()["notes"]
    assert listed == [note]
    other = (await client.get(f"/v1/projects/{other_project_id}/notes")).json()["notes"]
    assert other == []
    versions = (await client.get(f"/v1/notes/{note['note_id']}/versions")).json()["versions"]
    assert [(v["version"], v["author"], v["approval_id"], v["content"]) for v in versions] == [
        (1, "user", None, "Retrieval uses documents.")
    ]


async def test_notes_are_listed_most_recently_updated_first(client: httpx.AsyncClient) -> None:
    project_id = await _project(client)
    older = await _note(client, project_id, title="Older", content="first")
    newer = await _note(client, project_id, title="Newer", content="second")
    listed = (await client.get(f"/v1/projects/{project_id}/notes")).json()["notes"]
    assert [n["note_id"] for n in listed] == [newer["note_id"], older["note_id"]]

    await client.put(f"/v1/notes/{older['note_id']}", json={"version": 1, "content": "edited"})

    listed = (await client.get(f"/v1/projects/{project_id}/notes")).json()["notes"]
    assert [n["note_id"] for n in listed] == [older["note_id"], newer["note_id"]]


async def test_an_update_writes_the_next_version_and_keeps_the_old_one(
    client: httpx.AsyncClient,
) -> None:
    project_id = await _project(client)
    note = await _note(client, project_id, title="RAG", content="v1 text")

    response = await client.put(
        f"/v1/notes/{note['note_id']}", json={"version": 1, "content": "v2 text"}
    )

    assert response.status_code == 200, response.text
    updated = response.json()
    assert (updated["title"], updated["content"], updated["version"]) == ("RAG", "v2 text", 2)
    assert updated["created_at"] == note["created_at"]
    assert updated["updated_at"] > note["updated_at"]
    assert (await client.get(f"/v1/notes/{note['note_id']}")).json() == updated
    versions = (await client.get(f"/v1/notes/{note['note_id']}/versions")).json()["versions"]
    assert [(v["version"], v["title"], v["content"], v["author"]) for v in versions] == [
        (1, "RAG", "v1 text", "user"),
        (2, "RAG", "v2 text", "user"),
    ]


async def test_an_update_of_only_the_title_keeps_the_content(client: httpx.AsyncClient) -> None:
    project_id = await _project(client)
    note = await _note(client, project_id, title="RAG", content="unchanged body")

    response = await client.put(
        f"/v1/notes/{note['note_id']}", json={"version": 1, "title": "Retrieval"}
    )

    assert response.status_code == 200, response.text
    assert (response.json()["title"], response.json()["content"], response.json()["version"]) == (
        "Retrieval",
        "unchanged body",
        2,
    )


async def test_stale_version_is_rejected_and_nothing_is_overwritten(
    client: httpx.AsyncClient,
) -> None:
    project_id = await _project(client)
    note = await _note(client, project_id, title="RAG", content="original")
    first = await client.put(
        f"/v1/notes/{note['note_id']}", json={"version": 1, "content": "first writer"}
    )
    assert first.status_code == 200

    stale = await client.put(
        f"/v1/notes/{note['note_id']}",
        json={"version": 1, "title": "Clobbered", "content": "second writer"},
    )

    assert stale.status_code == 409
    error = stale.json()["error"]
    assert error["code"] == "version_conflict"
    assert error["details"] == {
        "note_id": note["note_id"],
        "current_version": 2,
        "base_version": 1,
    }
    current = (await client.get(f"/v1/notes/{note['note_id']}")).json()
    assert (current["title"], current["content"], current["version"]) == (
        "RAG",
        "first writer",
        2,
    )
    versions = (await client.get(f"/v1/notes/{note['note_id']}/versions")).json()["versions"]
    assert [(v["version"], v["content"]) for v in versions] == [
        (1, "original"),
        (2, "first writer"),
    ]


async def test_a_version_from_the_future_is_a_conflict_too(client: httpx.AsyncClient) -> None:
    project_id = await _project(client)
    note = await _note(client, project_id, title="RAG", content="original")

    response = await client.put(
        f"/v1/notes/{note['note_id']}", json={"version": 5, "content": "from the future"}
    )

    assert response.status_code == 409
    assert _error_code(response) == "version_conflict"
    assert (await client.get(f"/v1/notes/{note['note_id']}")).json()["content"] == "original"


async def test_a_deleted_note_is_gone_everywhere(client: httpx.AsyncClient) -> None:
    project_id = await _project(client)
    note = await _note(client, project_id, title="RAG", content="Retrieval uses documents.")

    deleted = await client.delete(f"/v1/notes/{note['note_id']}")

    assert deleted.status_code == 204
    assert deleted.content == b""
    for response in (
        await client.get(f"/v1/notes/{note['note_id']}"),
        await client.get(f"/v1/notes/{note['note_id']}/versions"),
        await client.put(f"/v1/notes/{note['note_id']}", json={"version": 1, "content": "x"}),
        await client.delete(f"/v1/notes/{note['note_id']}"),
    ):
        assert response.status_code == 404
        assert _error_code(response) == "note_not_found"
        assert response.json()["error"]["details"] == {"note_id": note["note_id"]}
    assert (await client.get(f"/v1/projects/{project_id}/notes")).json()["notes"] == []


# Validation


async def test_a_note_with_an_empty_title_is_refused(client: httpx.AsyncClient) -> None:
    project_id = await _project(client)

    response = await client.post(
        f"/v1/projects/{project_id}/notes", json={"title": "", "content": "body"}
    )

    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "request_invalid"
    assert ["body", "title"] in [e["loc"] for e in error["details"]["errors"]]
    assert (await client.get(f"/v1/projects/{project_id}/notes")).json()["notes"] == []


async def test_an_update_to_an_empty_title_is_refused(client: httpx.AsyncClient) -> None:
    project_id = await _project(client)
    note = await _note(client, project_id, title="RAG", content="body")

    response = await client.put(f"/v1/notes/{note['note_id']}", json={"version": 1, "title": ""})

    assert response.status_code == 422
    assert _error_code(response) == "request_invalid"
    assert (await client.get(f"/v1/notes/{note['note_id']}")).json()["version"] == 1


async def test_an_update_without_a_base_version_is_refused(client: httpx.AsyncClient) -> None:
    project_id = await _project(client)
    note = await _note(client, project_id, title="RAG", content="body")

    response = await client.put(f"/v1/notes/{note['note_id']}", json={"content": "blind write"})

    assert response.status_code == 422
    assert _error_code(response) == "request_invalid"
    assert (await client.get(f"/v1/notes/{note['note_id']}")).json()["content"] == "body"


async def test_an_unknown_project_is_not_found_for_every_project_route(
    client: httpx.AsyncClient,
) -> None:
    unknown = str(uuid4())

    for response in (
        await client.post(f"/v1/projects/{unknown}/notes", json={"title": "T", "content": ""}),
        await client.get(f"/v1/projects/{unknown}/notes"),
        await client.get(f"/v1/projects/{unknown}/search", params={"q": "anything"}),
    ):
        assert response.status_code == 404
        error = response.json()["error"]
        assert (error["code"], error["details"]) == ("project_not_found", {"project_id": unknown})


async def test_an_unknown_note_is_not_found(client: httpx.AsyncClient) -> None:
    unknown = str(uuid4())

    response = await client.get(f"/v1/notes/{unknown}")

    assert response.status_code == 404
    assert _error_code(response) == "note_not_found"


# Search


async def test_search_wraps_matched_terms_in_the_snippet(client: httpx.AsyncClient) -> None:
    project_id = await _project(client)
    note = await _note(
        client,
        project_id,
        title="Embeddings",
        content="Dense vectors let retrieval find passages by meaning.",
    )

    hits = await _search(client, project_id, "retrieval")

    assert [(h["note_id"], h["title"]) for h in hits] == [(note["note_id"], "Embeddings")]
    assert hits[0]["snippet"] == "Dense vectors let **retrieval** find passages by meaning."
    assert hits[0]["score"] > 0


async def test_search_matches_word_prefixes_and_stems(client: httpx.AsyncClient) -> None:
    project_id = await _project(client)
    note = await _note(client, project_id, title="Indexes", content="We are indexing documents.")

    for query in ("index", "indexes", "docu"):
        hits = await _search(client, project_id, query)
        assert [h["note_id"] for h in hits] == [note["note_id"]], query


async def test_a_note_matching_in_title_and_body_ranks_above_a_single_match(
    client: httpx.AsyncClient,
) -> None:
    project_id = await _project(client)
    once = await _note(
        client,
        project_id,
        title="Reading list",
        content="Papers on chunking, and one survey that mentions retrieval in passing.",
    )
    twice = await _note(
        client,
        project_id,
        title="Retrieval",
        content="Retrieval picks the passages the model reads before it answers.",
    )
    unrelated = await _note(client, project_id, title="Cooking", content="Boil the pasta.")

    hits = await _search(client, project_id, "retrieval")

    assert [h["note_id"] for h in hits] == [twice["note_id"], once["note_id"]]
    assert unrelated["note_id"] not in [h["note_id"] for h in hits]
    assert hits[0]["score"] > hits[1]["score"]
    assert "**retrieval**" in hits[1]["snippet"]


async def test_search_ignores_stop_words_next_to_meaningful_ones(
    client: httpx.AsyncClient,
) -> None:
    project_id = await _project(client)
    target = await _note(client, project_id, title="RAG", content="Retrieval uses documents.")
    await _note(client, project_id, title="Chores", content="What is the plan for the day?")

    hits = await _search(client, project_id, "What is the retrieval?")

    assert [h["note_id"] for h in hits] == [target["note_id"]]


async def test_a_query_of_only_stop_words_finds_nothing(client: httpx.AsyncClient) -> None:
    project_id = await _project(client)
    await _note(client, project_id, title="Chores", content="What is the plan for the day?")
    await _note(client, project_id, title="Theory", content="These are my thoughts on it.")

    assert await _search(client, project_id, "what is the") == []


async def test_a_query_without_words_or_without_matches_finds_nothing(
    client: httpx.AsyncClient,
) -> None:
    project_id = await _project(client)
    await _note(client, project_id, title="RAG", content="Retrieval uses documents.")

    assert await _search(client, project_id, "?!") == []
    assert await _search(client, project_id, "photosynthesis") == []


async def test_a_query_with_fts_syntax_is_searched_as_plain_words(
    client: httpx.AsyncClient,
) -> None:
    project_id = await _project(client)
    note = await _note(client, project_id, title="RAG", content="Retrieval uses documents.")

    hits = await _search(client, project_id, 'retrieval" OR NEAR(* title:')

    assert [h["note_id"] for h in hits] == [note["note_id"]]


async def test_an_empty_query_is_refused(client: httpx.AsyncClient) -> None:
    project_id = await _project(client)

    response = await client.get(f"/v1/projects/{project_id}/search", params={"q": ""})

    assert response.status_code == 422
    assert _error_code(response) == "request_invalid"


async def test_search_only_sees_the_projects_own_notes(client: httpx.AsyncClient) -> None:
    learning = await _project(client, "Learning")
    work = await _project(client, "Work")
    mine = await _note(client, learning, title="RAG", content="Retrieval uses documents.")
    await _note(client, work, title="RAG at work", content="Retrieval for the support bot.")

    hits = await _search(client, learning, "retrieval")

    assert [h["note_id"] for h in hits] == [mine["note_id"]]


async def test_search_reflects_an_update_and_forgets_the_old_content(
    client: httpx.AsyncClient,
) -> None:
    project_id = await _project(client)
    note = await _note(client, project_id, title="Draft", content="Notes about photosynthesis.")
    assert [h["note_id"] for h in await _search(client, project_id, "photosynthesis")] == [
        note["note_id"]
    ]

    response = await client.put(
        f"/v1/notes/{note['note_id']}",
        json={"version": 1, "title": "Biology", "content": "Notes about chlorophyll."},
    )
    assert response.status_code == 200

    assert await _search(client, project_id, "photosynthesis") == []
    assert await _search(client, project_id, "draft") == []
    hits = await _search(client, project_id, "chlorophyll")
    assert [(h["note_id"], h["title"]) for h in hits] == [(note["note_id"], "Biology")]
    assert hits[0]["snippet"] == "Notes about **chlorophyll**."
    assert [h["note_id"] for h in await _search(client, project_id, "biology")] == [note["note_id"]]


async def test_a_rejected_stale_update_leaves_the_search_index_alone(
    client: httpx.AsyncClient,
) -> None:
    project_id = await _project(client)
    note = await _note(client, project_id, title="RAG", content="Retrieval uses documents.")
    await client.put(f"/v1/notes/{note['note_id']}", json={"version": 1, "content": "Retrieval."})

    stale = await client.put(
        f"/v1/notes/{note['note_id']}", json={"version": 1, "content": "photosynthesis"}
    )

    assert stale.status_code == 409
    assert await _search(client, project_id, "photosynthesis") == []
    assert [h["note_id"] for h in await _search(client, project_id, "retrieval")] == [
        note["note_id"]
    ]


async def test_a_deleted_note_is_no_longer_found(client: httpx.AsyncClient) -> None:
    project_id = await _project(client)
    gone = await _note(client, project_id, title="RAG", content="Retrieval uses documents.")
    kept = await _note(client, project_id, title="Search", content="Retrieval by keywords.")

    assert (await client.delete(f"/v1/notes/{gone['note_id']}")).status_code == 204

    hits = await _search(client, project_id, "retrieval")
    assert [h["note_id"] for h in hits] == [kept["note_id"]]
