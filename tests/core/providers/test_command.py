"""Command models: request JSON on stdin, answer on stdout, failures as error kinds."""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
import time
from pathlib import Path

import pytest

from evalsite.core.providers import EndpointConfig, ErrorKind, ProviderError, build_provider
from evalsite.core.providers.command import child_environment, command_variable
from tests.helpers.providers import OPENAI_KEY, make_request

SCRIPT = """\
import json, os, sys, time
request = json.loads(sys.stdin.read())
mode = request["case_id"]
if mode == "fail":
    print("boom: key " + os.environ.get("LEAKED", ""), file=sys.stderr)
    sys.exit(3)
if mode == "slow":
    time.sleep(30)
if mode == "silent":
    sys.exit(0)
if mode == "flood":
    sys.stdout.write("x" * 100_000)
    sys.exit(0)
if mode == "env":
    print(json.dumps(sorted(k for k in os.environ if "KEY" in k or k == "VISIBLE")))
    sys.exit(0)
print(json.dumps({"got": request, "answer": "billing"}))
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    script = tmp_path / "harness.py"
    script.write_text(SCRIPT)
    return {
        command_variable("my-agent"): f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}",
        "PATH": "/usr/bin:/bin",
        "OPENAI_API_KEY": OPENAI_KEY,
        "LOCAL_VLLM_KEY": "x",
        "VISIBLE": "yes",
    }


def run(env: dict[str, str], case_id: str, **fields):
    request = make_request("command/my-agent", task_id="t", case_id=case_id, **fields)
    provider = build_provider(request.model, env=env)
    return asyncio.run(provider.complete(request, None))


def failure(env: dict[str, str], case_id: str, **fields) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        run(env, case_id, **fields)
    return info.value


def test_the_variable_name_comes_from_the_model_name():
    assert command_variable("my-agent") == "EVALSITE_COMMAND_MY_AGENT"


def test_the_request_json_goes_in_on_stdin_and_stdout_is_the_answer(env):
    completion = run(env, "ok", temperature=0.1, schema={"type": "object"})
    reply = json.loads(completion.text)
    assert reply["answer"] == "billing"
    assert reply["got"]["model"] == "command/my-agent"
    assert reply["got"]["temperature"] == 0.1
    assert reply["got"]["messages"][0] == {
        "role": "system",
        "content": "You triage support tickets.",
    }
    assert reply["got"]["schema"] == {"type": "object"}
    assert "Reply with JSON only" in reply["got"]["messages"][-1]["content"]
    assert completion.schema_mode == "prompted"
    assert not completion.text.endswith("\n")
    assert completion.usage is not None and completion.usage.output_tokens > 0


def test_a_nonzero_exit_is_a_server_error_with_the_stderr_tail(env):
    env["LEAKED"] = OPENAI_KEY
    env[command_variable("my-agent") + "_PASS_ENV"] = "LEAKED"
    error = failure(env, "fail")
    assert error.kind is ErrorKind.SERVER and error.retryable
    assert "exited with status 3" in error.message and "boom" in error.message
    assert OPENAI_KEY not in error.message


def test_no_answer_in_time_is_a_timeout_and_the_program_is_killed(env):
    started = time.monotonic()
    error = failure(env, "slow", timeout_s=0.5)
    assert error.kind is ErrorKind.TIMEOUT
    assert time.monotonic() - started < 5


def test_blank_stdout_is_empty(env):
    assert failure(env, "silent").kind is ErrorKind.EMPTY


def test_too_much_output_is_malformed(env, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr("evalsite.core.providers.command.MAX_OUTPUT_BYTES", 1000)
    assert failure(env, "flood").kind is ErrorKind.MALFORMED


def test_keys_are_kept_from_the_program_unless_passed_through(env):
    assert json.loads(run(env, "env").text) == ["VISIBLE"]
    env[command_variable("my-agent") + "_PASS_ENV"] = "OPENAI_API_KEY"
    assert json.loads(run(env, "env").text) == ["OPENAI_API_KEY", "VISIBLE"]


def test_child_environment_drops_secret_looking_variables_and_endpoint_keys():
    parent = {
        "HOME": "/home/x",
        "GITHUB_TOKEN": "t",
        "DJANGO_SECRET_KEY": "s",
        "DATABASE_URL": "postgres://u:p@h/db",
        "MY_GATEWAY": "k",
        "DB_PASSWORD": "p",
    }
    kept = child_environment(parent, name="a", also_secret=["MY_GATEWAY"])
    assert kept == {"HOME": "/home/x"}


def test_endpoint_key_variables_are_dropped_when_building(env, tmp_path: Path):
    env["GATEWAY_CREDS"] = "c"
    endpoints = {"gw": EndpointConfig("gw", "http://gw/v1", "GATEWAY_CREDS")}
    provider = build_provider("command/my-agent", env=env, endpoints=endpoints)
    assert "GATEWAY_CREDS" not in provider._env  # type: ignore[attr-defined]


def test_a_missing_variable_is_a_config_error_naming_it():
    with pytest.raises(ProviderError) as info:
        build_provider("command/my-agent", env={})
    assert info.value.kind is ErrorKind.CONFIG
    assert "EVALSITE_COMMAND_MY_AGENT" in info.value.message


def test_an_unparseable_command_line_is_a_config_error():
    with pytest.raises(ProviderError) as info:
        build_provider("command/x", env={"EVALSITE_COMMAND_X": "python 'unclosed"})
    assert info.value.kind is ErrorKind.CONFIG


def test_a_program_that_does_not_exist_is_a_config_error(tmp_path: Path):
    env = {"EVALSITE_COMMAND_GHOST": str(tmp_path / "no-such-program")}
    request = make_request("command/ghost")
    provider = build_provider(request.model, env=env)
    with pytest.raises(ProviderError) as info:
        asyncio.run(provider.complete(request, None))
    assert info.value.kind is ErrorKind.CONFIG
    assert "cannot run" in info.value.message


def test_the_program_runs_without_a_shell(tmp_path: Path):
    marker = tmp_path / "pwned"
    script = tmp_path / "echo.py"
    script.write_text("import sys; print(sys.argv[1:])")
    line = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))} ';touch {marker}'"
    request = make_request("command/echo")
    provider = build_provider(request.model, env={"EVALSITE_COMMAND_ECHO": line})
    completion = asyncio.run(provider.complete(request, None))
    assert completion.text == f"[';touch {marker}']"
    assert not marker.exists()


def test_a_lone_surrogate_in_the_request_reaches_the_program_as_a_json_escape(env):
    messages = ({"role": "user", "content": "odd \ud800 text"},)
    reply = json.loads(run(env, "ok", messages=messages).text)
    assert reply["got"]["messages"][0]["content"] == "odd \ud800 text"
