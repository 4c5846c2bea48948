"""``consentry bench``: drive a running server with concurrent consent conversations and measure
it beside a naive baseline; see ``docs/performance.md``."""
