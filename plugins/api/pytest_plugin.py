"""The pytest fixture of Caldera's test kit, registered through the ``pytest11`` entry point:
installing Caldera (with its ``testing`` extra) makes it available to any test suite.

```python
def test_my_plugin_is_served(caldera_serve):
    server = caldera_serve("tiers: [{plugins: [{name: my-plugin}]}]\\n")
    assert server.post("predicate", body).json() == {"status": "", "code": 0}
```
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from plugins.api.testing import Server, serve

ServeCaldera = Callable[..., Server]


def caldera_serve_fixture(tmp_path: Path) -> Iterator[ServeCaldera]:
    """``caldera_serve(config_text)`` starts a real ``caldera serve`` with the plugins installed
    in the test's environment (None: the embedded configuration; keyword arguments as
    :func:`plugins.api.testing.serve`); every server started is stopped at teardown."""
    started: list[Server] = []

    def start(config_text: str | None, **options: object) -> Server:
        server = serve(config_text, tmp_path, **options)  # type: ignore[arg-type]
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def pytest_configure(config: Any) -> None:
    """Register the fixture when pytest loads this plugin. pytest is taken from the modules
    the running pytest has loaded, never imported: this module ships in the wheel, whose runtime
    dependencies do not include pytest (the ``testing`` extra does), and it is only ever
    called by pytest itself."""
    pytest = sys.modules["pytest"]
    fixtures = type(
        "CalderaFixtures",
        (),
        {"caldera_serve": pytest.fixture(name="caldera_serve")(caldera_serve_fixture)},
    )
    config.pluginmanager.register(fixtures, "caldera-fixtures")
