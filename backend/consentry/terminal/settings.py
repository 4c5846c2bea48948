"""Where the terminal client finds the server, and how it behaves on this terminal.

Read once from the environment; ``--url`` and ``--api-key`` override ``CONSENTRY_URL`` and
``CONSENTRY_API_KEY``. ``EDITOR`` (else ``VISUAL``, else ``vi``) edits a proposal; ``NO_COLOR``
(https://no-color.org: set and not empty) turns colour off in ``--color auto``.
"""

from __future__ import annotations

import shlex
from typing import Literal, TextIO

from pydantic import AnyHttpUrl, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["DEFAULT_URL", "ClientSettings", "ColorMode", "use_color"]

DEFAULT_URL = "http://127.0.0.1:8000"
ColorMode = Literal["auto", "always", "never"]


class ClientSettings(BaseSettings):
    """The terminal client's settings (not the server's: see ``consentry.settings``)."""

    model_config = SettingsConfigDict(env_prefix="CONSENTRY_", extra="ignore")

    url: AnyHttpUrl = Field(
        default=AnyHttpUrl(DEFAULT_URL), description="The server's base URL (`CONSENTRY_URL`)."
    )
    api_key: SecretStr | None = Field(
        default=None, description="Sent as `Authorization: Bearer …` (`CONSENTRY_API_KEY`)."
    )
    editor: str | None = Field(default=None, validation_alias="EDITOR")
    visual: str | None = Field(default=None, validation_alias="VISUAL")
    no_color: str | None = Field(default=None, validation_alias="NO_COLOR")

    @property
    def base_url(self) -> str:
        return str(self.url).rstrip("/")

    @property
    def editor_command(self) -> list[str]:
        """``$EDITOR``, else ``$VISUAL``, else ``vi``, split like a shell would (``code -w``)."""
        for command in (self.editor, self.visual):
            if command and command.strip():
                try:
                    return shlex.split(command)
                except ValueError:  # unbalanced quotes: take the words as they are
                    return command.split()
        return ["vi"]


def use_color(mode: ColorMode, *, settings: ClientSettings, stream: TextIO) -> bool:
    """``always``/``never`` as said; ``auto``: only on a terminal, and not with ``NO_COLOR``."""
    if mode != "auto":
        return mode == "always"
    return not settings.no_color and stream.isatty()
