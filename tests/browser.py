"""What the browser tests share besides their fixtures (those are in ``conftest.py``): one
page load with its console errors and its requests to other hosts recorded."""

from __future__ import annotations

from urllib.parse import urlsplit

from tests.conftest import ARTIFACTS

LOCAL_HOSTS = {"127.0.0.1", "localhost"}


def is_foreign(url: str) -> bool:
    """A request that leaves this machine (data: and blob: URLs stay in the page)."""
    parts = urlsplit(url)
    return parts.scheme not in {"data", "blob"} and parts.hostname not in LOCAL_HOSTS


class Visit:
    """One page load, with every console error and every request recorded."""

    def __init__(self, browser, url: str, color_scheme: str = "light"):
        self.errors: list[str] = []
        self.foreign: list[str] = []
        self.context = browser.new_context(
            color_scheme=color_scheme, viewport={"width": 1280, "height": 900}
        )
        self.page = self.context.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.route("**/*", self._route)
        response = self.page.goto(url, wait_until="networkidle")
        assert response is not None and response.ok, f"{url}: {response and response.status}"

    def _route(self, route):
        url = route.request.url
        if is_foreign(url):
            self.foreign.append(url)
            route.abort()
        else:
            route.continue_()

    def check_clean(self):
        assert not self.errors, f"console errors: {self.errors}"
        assert not self.foreign, f"requests to other hosts: {self.foreign}"

    def screenshot(self, name: str):
        ARTIFACTS.mkdir(exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)

    def close(self):
        self.context.close()
