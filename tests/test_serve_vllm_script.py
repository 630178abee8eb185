"""scripts/serve_vllm.sh binds loopback by default, as scripts/serve.py does, and serves another
address only with a key (or NO_KEY=1 said on purpose) (issue 51, 6: it bound 0.0.0.0 with no
key). A stand-in `vllm` on PATH prints what it was started with."""

from __future__ import annotations

import os
import subprocess

from conftest import ROOT

SCRIPT = ROOT / "scripts" / "serve_vllm.sh"


def _serve(tmp_path, **env):
    fake = tmp_path / "bin" / "vllm"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text('#!/bin/sh\necho "vllm $* key=${VLLM_API_KEY:-none}"\n')
    fake.chmod(0o755)
    base = {k: v for k, v in os.environ.items() if k not in ("HOST", "API_KEY_ENV", "NO_KEY")}
    base["PATH"] = f"{fake.parent}{os.pathsep}{base['PATH']}"
    return subprocess.run(["bash", str(SCRIPT), "Qwen/Qwen3-8B"], env={**base, **env},
                          capture_output=True, text=True, timeout=30)  # fmt: skip


def test_loopback_by_default(tmp_path):
    proc = _serve(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "--host 127.0.0.1" in proc.stdout and "key=none" in proc.stdout


def test_another_address_needs_a_key(tmp_path):
    refused = _serve(tmp_path, HOST="0.0.0.0")
    assert refused.returncode == 2 and "with no key" in refused.stderr
    assert "vllm serve" not in refused.stdout  # nothing was started
    keyed = _serve(tmp_path, HOST="0.0.0.0", API_KEY_ENV="MY_KEY", MY_KEY="sekret")
    assert keyed.returncode == 0, keyed.stderr
    assert "--host 0.0.0.0" in keyed.stdout and "key=sekret" in keyed.stdout
    assert "sekret" not in keyed.stdout.split("key=")[0]  # not on the command line
    assert "backbone.api_key_env=MY_KEY" in keyed.stdout
    unset = _serve(tmp_path, HOST="0.0.0.0", API_KEY_ENV="MY_KEY")
    assert unset.returncode == 2 and "MY_KEY is not set" in unset.stderr
    assert _serve(tmp_path, HOST="0.0.0.0", NO_KEY="1").returncode == 0
