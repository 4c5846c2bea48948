"""``check_database``: a database that cannot be served is one sentence naming
``CONSENTRY_DATABASE_URL`` and what to do, found before anything starts; nothing is created
where the person did not ask for it, and nothing stored is touched."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from consentry.storage.db.database_check import DatabaseCheck, DatabaseSettingError, check_database
from tests.postgres import PostgresCluster


def _refusal(url: str, *, sqlite_path: Path | None) -> str:
    with pytest.raises(DatabaseSettingError) as refused:
        check_database(url, sqlite_path=sqlite_path)
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("CONSENTRY_DATABASE_URL")
    return message


def test_a_file_in_an_existing_folder_is_served_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "c.db"

    assert check_database(f"sqlite:///{path}", sqlite_path=path) == DatabaseCheck(f"SQLite {path}")
    assert list(tmp_path.iterdir()) == []  # the check creates nothing; the server will


def test_a_path_below_a_file_is_refused_in_one_sentence(tmp_path: Path) -> None:
    blocker = tmp_path / "passwd"
    blocker.write_text("root:x:0:0\n")
    path = blocker / "x.db"

    message = _refusal(f"sqlite:///{path}", sqlite_path=path)

    assert message == (
        f"CONSENTRY_DATABASE_URL: {blocker} is a file, not a folder, so {path} cannot be created "
        "there; choose a path in a folder"
    )
    assert blocker.read_text() == "root:x:0:0\n"


def test_a_missing_folder_outside_data_is_refused_and_not_created(tmp_path: Path) -> None:
    path = tmp_path / "typo" / "deeper" / "c.db"

    message = _refusal(f"sqlite:///{path}", sqlite_path=path)

    folder = path.parent
    assert message == (
        f"CONSENTRY_DATABASE_URL: the folder {folder} does not exist; create it (mkdir -p "
        f"{folder}) or choose a file in a folder that exists (only folders under data/ are "
        "created for you)"
    )
    assert not (tmp_path / "typo").exists()


def test_a_missing_folder_under_data_is_created_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = Path("data") / "team" / "c.db"

    checked = check_database(f"sqlite:///{path}", sqlite_path=path)

    assert checked == DatabaseCheck(f"SQLite {path}", created_folder=path.parent)
    assert (tmp_path / "data" / "team").is_dir()


def test_a_folder_named_as_the_database_is_refused(tmp_path: Path) -> None:
    message = _refusal(f"sqlite:///{tmp_path}", sqlite_path=tmp_path)

    assert message == f"CONSENTRY_DATABASE_URL: {tmp_path} is a folder; name a file in it"


def test_a_file_that_is_not_a_sqlite_database_is_refused_and_left_as_it_was(
    tmp_path: Path,
) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("my notes, not a database\n" * 100)

    message = _refusal(f"sqlite:///{path}", sqlite_path=path)

    assert message == (
        f"CONSENTRY_DATABASE_URL: {path} cannot be opened as a SQLite database (file is not a "
        "database); point the setting at a Consentry database, or at a new file"
    )
    assert path.read_text() == "my notes, not a database\n" * 100


def test_an_unreachable_postgresql_is_one_sentence_without_the_password() -> None:
    with socket.socket() as unused:  # a port nothing listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    url = f"postgresql://consentry:s3cret@127.0.0.1:{port}/consentry"

    message = _refusal(url, sqlite_path=None)

    assert message.startswith(
        f"CONSENTRY_DATABASE_URL: cannot connect to PostgreSQL consentry on 127.0.0.1:{port}: "
    )
    assert "Connection refused" in message
    assert message.endswith(
        "Start the server, or fix the URL (postgresql://user:password@host:5432/database)"
    )
    assert "s3cret" not in message


def test_a_missing_postgresql_database_is_named(postgres: PostgresCluster) -> None:
    message = _refusal(postgres.url("no_such_db"), sqlite_path=None)

    assert f"cannot connect to PostgreSQL no_such_db on 127.0.0.1:{postgres.port}" in message
    assert 'database "no_such_db" does not exist' in message


def test_a_reachable_postgresql_is_described_by_database_and_server(
    postgres: PostgresCluster,
) -> None:
    url = postgres.new_database()

    checked = check_database(url, sqlite_path=None)

    assert checked == DatabaseCheck(
        f"PostgreSQL {url.rsplit('/', 1)[1]} on 127.0.0.1:{postgres.port}"
    )
