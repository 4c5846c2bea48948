"""Colours for the terminal: ANSI SGR codes, only when the palette is on."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Palette"]

_RESET = "\x1b[0m"


@dataclass(frozen=True)
class Palette:
    """ANSI colours when ``enabled``, plain text otherwise."""

    enabled: bool

    def _paint(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}{_RESET}" if self.enabled and text else text

    def bold(self, text: str) -> str:
        return self._paint("1", text)

    def dim(self, text: str) -> str:
        return self._paint("2", text)

    def red(self, text: str) -> str:
        return self._paint("31", text)

    def green(self, text: str) -> str:
        return self._paint("32", text)

    def yellow(self, text: str) -> str:
        return self._paint("33", text)

    def cyan(self, text: str) -> str:
        return self._paint("36", text)

    def red_marked(self, text: str) -> str:
        """Red, in reverse video: the words a changed line loses."""
        return self._paint("7;31", text)

    def green_marked(self, text: str) -> str:
        """Green, in reverse video: the words a changed line gains."""
        return self._paint("7;32", text)
