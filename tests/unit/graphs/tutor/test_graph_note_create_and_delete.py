"""The tutor's other two consents, on the graph alone (harness in tests/tutor.py):

- ``note_create``: asked to save the discussion with no note open, the tutor proposes a new note
  and creates it once per approval;
- ``note_delete``: asked to delete the open note, it always asks (approve or reject only) and
  deletes it once per approval, only if the note is still at the proposed version."""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from consentry_graphs.consent import ConsentRequest
from consentry_graphs.tutor.memory_notes import EffectCall
from tests.tutor import INTERRUPTED, NOTE, PROJECT, Tutor

SAVE = "Please save our discussion to a note"
DELETE = "Please delete this note"
NEW_TITLE = "Summary of our discussion"
ASKED_TO_CREATE = [
    "analyze_message",
    "draft_note_creation",
    "request_note_create_consent",
    INTERRUPTED,
]
ASKED_TO_DELETE = [
    "analyze_message",
    "draft_note_deletion",
    "request_note_delete_consent",
    INTERRUPTED,
]


@pytest.fixture
def tutor() -> Tutor:
    return Tutor.with_notes(NOTE)


async def _asked_to_create(tutor: Tutor) -> tuple[str, ConsentRequest]:
    await tutor.say("What is retrieval?", note_id=None)
    turn = await tutor.say(SAVE, note_id=None)
    assert turn.nodes == ASKED_TO_CREATE
    return await tutor.pending()


async def _asked_to_delete(tutor: Tutor) -> tuple[str, ConsentRequest]:
    turn = await tutor.say(DELETE)
    assert turn.nodes == ASKED_TO_DELETE
    return await tutor.pending()


# note_create


async def test_saving_with_no_note_open_asks_to_create_a_new_note(tutor: Tutor) -> None:
    _, request = await _asked_to_create(tutor)

    assert (request.kind, request.allowed_decisions, request.always_ask) == (
        "note_create",
        ["approve", "edit", "reject"],
        False,
    )
    assert request.title == f"Save a summary as a new note \u201c{NEW_TITLE}\u201d?"
    assert set(request.proposal) == {"project_id", "title", "content"}
    assert (request.proposal["project_id"], request.proposal["title"]) == (PROJECT, NEW_TITLE)
    assert request.proposal["content"].startswith(f"## {NEW_TITLE}\n")
    assert "- **Question:** What is retrieval?" in request.proposal["content"]
    assert SAVE not in request.proposal["content"]
    assert tutor.store.calls == []


async def test_approving_creates_the_proposed_note_once(tutor: Tutor) -> None:
    interrupt_id, request = await _asked_to_create(tutor)

    turn = await tutor.decide(interrupt_id, "approve")

    assert turn.nodes == ["request_note_create_consent", "create_note"]
    assert tutor.store.calls == [
        EffectCall(
            "apply_note_creation",
            interrupt_id,
            {"project_id": PROJECT, "title": NEW_TITLE, "content": request.proposal["content"]},
        )
    ]
    created = tutor.store.notes["note-2"]
    assert (created.title, created.content, created.version) == (
        NEW_TITLE,
        request.proposal["content"],
        1,
    )
    assert turn.notes_sent == [{"event": "note", **created.model_dump()}]
    assert turn.reply == f"Done: I created the new note \u201c{NEW_TITLE}\u201d."


async def test_an_edit_creates_the_persons_version(tutor: Tutor) -> None:
    interrupt_id, request = await _asked_to_create(tutor)

    turn = await tutor.decide(interrupt_id, "edit", edited={"title": "Retrieval"})

    assert [c.args for c in tutor.store.calls] == [
        {"project_id": PROJECT, "title": "Retrieval", "content": request.proposal["content"]}
    ]
    assert turn.reply == "Done: I saved your version as the new note \u201cRetrieval\u201d."


@pytest.mark.parametrize(
    ("decision", "comment", "reply"),
    [
        ("reject", "later", "OK, I created no note. You said: \u201clater\u201d."),
        (
            "expire",
            None,
            f"The request to create \u201c{NEW_TITLE}\u201d expired before anyone decided, "
            "so I created nothing.",
        ),
    ],
)
async def test_a_rejected_or_expired_creation_creates_nothing(
    tutor: Tutor, decision: str, comment: str | None, reply: str
) -> None:
    interrupt_id, _ = await _asked_to_create(tutor)

    turn = await tutor.decide(interrupt_id, decision, comment=comment)

    assert turn.nodes == ["request_note_create_consent", "skip_note_creation"]
    assert turn.reply == reply
    assert (tutor.store.calls, list(tutor.store.notes)) == ([], [NOTE.note_id])


async def test_a_rerun_of_the_create_step_creates_one_note(tutor: Tutor) -> None:
    interrupt_id, _ = await _asked_to_create(tutor)
    await tutor.decide(interrupt_id, "approve")
    history = [snapshot async for snapshot in tutor.graph.aget_state_history(tutor.config)]
    before_create = next(s for s in history if s.next == ("create_note",))

    replayed = await tutor.run(None, before_create.config)

    assert replayed.nodes == ["create_note"]
    assert [c.approval_id for c in tutor.store.calls] == [interrupt_id, interrupt_id]
    assert (tutor.store.writes, sorted(tutor.store.notes)) == (1, [NOTE.note_id, "note-2"])
    assert replayed.reply == f"Done: I created the new note \u201c{NEW_TITLE}\u201d."


# note_delete


@pytest.mark.parametrize(
    "message", ["delete this note", "remove my note", "please delete the note"]
)
async def test_asking_to_delete_the_open_note_asks_a_person_first(
    tutor: Tutor, message: str
) -> None:
    turn = await tutor.say(message)

    assert turn.nodes == ASKED_TO_DELETE
    _, request = await tutor.pending()
    assert (request.kind, request.allowed_decisions, request.always_ask) == (
        "note_delete",
        ["approve", "reject"],
        True,
    )
    assert request.title == "Delete your note \u201cRAG\u201d?"
    assert request.proposal == {
        "note_id": NOTE.note_id,
        "title": "RAG",
        "version": 1,
        "content": NOTE.content,
    }
    assert tutor.store.notes == {NOTE.note_id: NOTE}


async def test_a_question_about_deleting_is_answered_not_asked(tutor: Tutor) -> None:
    turn = await tutor.say("What happens if I delete a note?")

    assert turn.nodes == ["analyze_message", "answer_question"]
    assert not await tutor.has_pending()


async def test_a_models_delete_note_intent_is_followed(tutor: Tutor) -> None:
    classified = AIMessage('{"intent": "delete_note", "query": ""}')
    tutor = Tutor.with_notes(NOTE, model=GenericFakeChatModel(messages=iter([classified])))

    turn = await tutor.say("Get rid of it")

    assert turn.nodes == ASKED_TO_DELETE
    assert (await tutor.pending())[1].kind == "note_delete"


async def test_with_no_note_open_there_is_nothing_to_delete_and_no_consent(tutor: Tutor) -> None:
    turn = await tutor.say(DELETE, note_id=None)

    assert turn.nodes == ["analyze_message", "report_no_open_note"]
    assert turn.reply == (
        "There is no note open to delete. Open the note you want to delete, then ask again."
    )
    assert not await tutor.has_pending()
    assert tutor.store.notes == {NOTE.note_id: NOTE}


async def test_approving_deletes_the_note_once(tutor: Tutor) -> None:
    interrupt_id, _ = await _asked_to_delete(tutor)

    turn = await tutor.decide(interrupt_id, "approve")

    assert turn.nodes == ["request_note_delete_consent", "delete_note"]
    assert tutor.store.calls == [
        EffectCall("apply_note_deletion", interrupt_id, {"note_id": NOTE.note_id, "version": 1})
    ]
    assert tutor.store.notes == {}
    assert turn.reply == "Done: I deleted \u201cRAG\u201d."
    assert turn.values["note_id"] is None


async def test_a_rerun_of_the_delete_step_deletes_once(tutor: Tutor) -> None:
    interrupt_id, _ = await _asked_to_delete(tutor)
    await tutor.decide(interrupt_id, "approve")
    history = [snapshot async for snapshot in tutor.graph.aget_state_history(tutor.config)]
    before_delete = next(s for s in history if s.next == ("delete_note",))

    replayed = await tutor.run(None, before_delete.config)

    assert replayed.nodes == ["delete_note"]
    assert [c.approval_id for c in tutor.store.calls] == [interrupt_id, interrupt_id]
    assert tutor.store.writes == 1
    assert replayed.reply == "Done: I deleted \u201cRAG\u201d."


async def test_a_note_changed_since_the_request_is_not_deleted(tutor: Tutor) -> None:
    interrupt_id, _ = await _asked_to_delete(tutor)
    changed = NOTE.model_copy(update={"content": "Rewritten meanwhile.", "version": 2})
    tutor.store.notes[NOTE.note_id] = changed

    turn = await tutor.decide(interrupt_id, "approve")

    assert turn.nodes == ["request_note_delete_consent", "delete_note"]
    assert tutor.store.notes == {NOTE.note_id: changed}
    assert turn.reply == (
        "Nothing was deleted: \u201cRAG\u201d changed since I asked (version 1 \u2192 2). "
        "Ask me again if you still want to delete it."
    )


async def test_a_note_deleted_meanwhile_is_reported_as_gone(tutor: Tutor) -> None:
    interrupt_id, _ = await _asked_to_delete(tutor)
    del tutor.store.notes[NOTE.note_id]

    turn = await tutor.decide(interrupt_id, "approve")

    assert turn.reply == "Nothing was deleted: \u201cRAG\u201d no longer exists."


@pytest.mark.parametrize(
    ("decision", "comment", "reply"),
    [
        (
            "reject",
            "keep it",
            "OK, I kept your note \u201cRAG\u201d. You said: \u201ckeep it\u201d.",
        ),
        (
            "expire",
            None,
            "The request to delete \u201cRAG\u201d expired before anyone decided, so I kept "
            "the note.",
        ),
    ],
)
async def test_a_rejected_or_expired_deletion_keeps_the_note(
    tutor: Tutor, decision: str, comment: str | None, reply: str
) -> None:
    interrupt_id, _ = await _asked_to_delete(tutor)

    turn = await tutor.decide(interrupt_id, decision, comment=comment)

    assert turn.nodes == ["request_note_delete_consent", "keep_note"]
    assert turn.reply == reply
    assert (tutor.store.calls, tutor.store.notes) == ([], {NOTE.note_id: NOTE})


async def test_an_edit_of_a_deletion_is_refused_by_the_kind(tutor: Tutor) -> None:
    interrupt_id, _ = await _asked_to_delete(tutor)

    with pytest.raises(ValueError, match="decision 'edit' is not allowed"):
        await tutor.decide(interrupt_id, "edit", edited={"title": "x"})

    assert tutor.store.notes == {NOTE.note_id: NOTE}
