"""`serve` and `playground` without the [memory] extra: the service's modules load with numpy absent."""

from __future__ import annotations

import subprocess
import sys


def test_the_service_and_the_playground_load_without_numpy():
    code = ("import sys; sys.modules['numpy'] = None\n"
            "from cleo_rules.serve import ServeSettings, create_app\n"
            "app = create_app(ServeSettings(watch_interval=0))\n"
            "import cleo_rules.serve.playground, cleo_rules.serve.scheduler\n"
            "assert 'numpy' not in {m for m, v in sys.modules.items() if v is not None}\n"
            "print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
