"""The ``caldera`` command: serve, check-config, volcano-config, replay, explain, check-plugin,
openapi."""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import yaml
from pydantic import ValidationError

from app import __version__
from app.cluster_state import scheduler_flags
from app.cluster_state.modes import SessionStateMode
from app.commands import sizing
from app.commands.volcano_entry import (
    body_limits_note,
    identifiers_refusal,
    sizing_mode_lines,
    volcano_entry,
    volcano_url,
)
from app.config import (
    CalderaConfig,
    ConfigError,
    effective_config,
    load_config,
    load_config_text,
    read_config_text,
    release_note,
)
from app.config_checks import argument_warnings, build_problems
from app.server.settings import DEFAULT_PORT, Settings, cli_options
from plugins.api.extension_points import BY_VERB, VERBS
from schemas.goduration import DurationError, parse_go_duration

EXIT_CONFIG = 2
EXIT_DIFFERS = 1
"""caldera replay: some answer differs from the recording."""


def _fail_config(exc: ConfigError) -> int:
    if exc.more:
        lines = str(exc).splitlines()
        print(f"caldera: {len(lines)} configuration errors:", file=sys.stderr)
        for line in lines:
            print(f"  {line}", file=sys.stderr)
    else:
        print(f"caldera: configuration error: {exc}", file=sys.stderr)
    return EXIT_CONFIG


def _fail_build(source: str, problems: list[tuple[str, str]]) -> int:
    """Plugins that cannot be built: the same words and exit status as a configuration error
    (``serve`` and ``check-config`` alike)."""
    return _fail_config(ConfigError.of(source, problems))


SETTING_OPTIONS = "_setting_options"
"""The ``args`` attribute naming the settings a subcommand took as options
(:func:`_add_setting_options`): only those are settings. Another option of the same
subcommand may share a setting's name (``explain --shadow`` is a flag, ``serve --shadow`` a
file), so a setting is never read from an attribute its subcommand did not declare as one."""


def _given(args: argparse.Namespace) -> dict[str, Any]:
    """The settings this subcommand took as options that the user gave."""
    declared: tuple[str, ...] = getattr(args, SETTING_OPTIONS, ())
    return {name: value for name in declared if (value := getattr(args, name, None)) is not None}


def _settings(args: argparse.Namespace) -> Settings:
    return Settings(**_given(args))


def setting_source(name: str, args: argparse.Namespace) -> str:
    """How the user gave setting ``name``: the option (``--port``), the environment variable
    (``CALDERA_PORT``), or, when neither, the option and its default."""
    option = f"--{name.replace('_', '-')}"
    if name in _given(args):
        return option
    variable = f"CALDERA_{name.upper()}"
    if variable in os.environ:
        return variable
    default = Settings.model_fields[name].default
    if name not in cli_options():
        return variable
    return option if default is None else f"{option} (default {default})"


def settings_problems(exc: ValidationError, args: argparse.Namespace) -> str:
    """``exc``'s problems, each naming what the user typed: ``--port 99999: …`` for an option,
    ``CALDERA_PORT=99999: …`` for the environment; a problem of two settings together names
    both the same way."""
    fields = sorted(Settings.model_fields, key=len, reverse=True)
    problems = []
    for error in exc.errors():
        message = str(error["msg"]).removeprefix("Value error, ")
        if error["loc"]:
            name = str(error["loc"][0])
            source = setting_source(name, args)
            value = error.get("input")
            given = f"{source}={value}" if source.startswith("CALDERA_") else f"{source} {value}"
            problems.append(f"{given}: {message}")
            continue
        for name in fields:  # longest first: health_port before port
            message = re.sub(rf"\b(?<!-){name}\b", setting_source(name, args), message)
        problems.append(message)
    return "; ".join(problems)


ASKING_OPTIONS = {
    "host": "the address of the Caldera to ask (default: serve's --host as CALDERA_HOST sets it,"
    " a wildcard address reached on 127.0.0.1)",
    "port": f"the port of its verb listener (default: CALDERA_PORT, else {DEFAULT_PORT})",
}
"""``--host`` and ``--port`` of the commands that ask a running Caldera (explain, shadow): the
same settings as serve's, read as where to reach it rather than where to listen."""


def _add_setting_options(
    parser: argparse.ArgumentParser, *only: str, helps: dict[str, str] | None = None
) -> None:
    """The ``Settings`` fields marked ``cli`` as options (``only``: just those), their types,
    choices and help from the field's declaration (``helps`` overrides it per option); the
    default stays the setting's own (an unset option leaves the environment's value or the
    default in charge)."""
    declared = list(parser.get_default(SETTING_OPTIONS) or ())
    for name, help in cli_options().items():
        if only and name not in only:
            continue
        declared.append(name)
        help = (helps or {}).get(name, help)
        annotation = Settings.model_fields[name].annotation
        kinds = [a for a in get_args(annotation) or (annotation,) if a is not type(None)]
        kwargs: dict[str, Any] = {"dest": name, "help": help}
        if kinds == [int]:
            kwargs["type"] = int
        elif get_origin(annotation) is Literal:
            kwargs["choices"] = list(get_args(annotation))
            kwargs["type"] = str.lower  # --log-level DEBUG as well as debug
        parser.add_argument(f"--{name.replace('_', '-')}", **kwargs)
    parser.set_defaults(**{SETTING_OPTIONS: tuple(declared)})


def _add_asking_options(parser: argparse.ArgumentParser) -> None:
    """The options of the commands that ask a running Caldera (explain, shadow): where it is
    (``--url``, or serve's ``--host``/``--port`` read as where to reach it) and ``--json``."""
    parser.add_argument(
        "--url", help="Caldera's verb listener (default: this pod's, from --host/--port)"
    )
    parser.add_argument("--json", action="store_true", help="print the whole answer as JSON")
    _add_setting_options(parser, "host", "port", helps=ASKING_OPTIONS)


def cmd_serve(args: argparse.Namespace) -> int:
    """Settings (options over the environment over the defaults), the options they and the
    configuration they name make (app/server/options.py), and serving them until SIGTERM
    (app/server/serve.py); a configuration that does not load or build, or a TLS file that is
    missing, exits 2 before anything listens."""
    from app.server.options import MissingFile, ServeOptions
    from app.server.serve import serve

    settings = _settings(args)
    try:
        options = ServeOptions.from_settings(
            settings, record=args.record, record_max_bytes=args.record_max_bytes
        )
        return serve(options)
    except ConfigError as exc:  # the file, or a plugin that cannot be built
        return _fail_config(exc)
    except MissingFile as exc:
        print(f"caldera: {exc}", file=sys.stderr)
        return EXIT_CONFIG


def cmd_check_config(args: argparse.Namespace) -> int:
    """Validate a configuration (FILE, ``--config FILE``, ``-`` for stdin, else CALDERA_CONFIG
    or the embedded default), build its plugins, print it with defaults spelled out. Errors
    and warnings both, every one of them; exit 2 on an error, 1 on a warning with
    ``--strict``."""
    if args.file is not None and args.config is not None and args.file != args.config:
        print(
            f"caldera check-config: give the file once, not {args.file} and --config {args.config}",
            file=sys.stderr,
        )
        return EXIT_CONFIG
    path = args.file if args.file is not None else _settings(args).config
    try:
        text, source = ("", "<stdin>") if path == "-" else read_config_text(path)
        if path == "-":
            text = sys.stdin.read()
        config = load_config_text(text, source)
    except ConfigError as exc:
        code = _fail_config(exc)
        _print_warnings(check_warnings(exc.rest if path else None), sys.stderr)
        return code
    logging.disable(logging.WARNING)  # the plugins' own log lines would repeat the warnings
    try:
        broken = build_problems(config)
    finally:
        logging.disable(logging.NOTSET)
    warnings = check_warnings(config)
    if broken:
        code = _fail_build(source, broken)
        _print_warnings(warnings, sys.stderr)
        return code
    flags = "every flag" if args.all_flags else "the flags that differ from Volcano's defaults"
    print(
        f"# {source}: valid. Effective configuration: defaults spelled out, each plugin's"
        f" arguments as it reads them, {flags}:"
    )
    print(f"# {release_note(config)}")
    _print_warnings(warnings, sys.stdout)
    print(yaml.safe_dump(effective_config(config, args.all_flags), sort_keys=False), end="")
    return EXIT_DIFFERS if args.strict and warnings else 0


def check_warnings(config: CalderaConfig | None) -> list[str]:
    """``argument_warnings`` without the plugins' own log lines, which would repeat them on
    stderr (every problem is printed by check-config itself)."""
    if config is None:
        return []
    logging.disable(logging.WARNING)
    try:
        return argument_warnings(config)
    finally:
        logging.disable(logging.NOTSET)


def _print_warnings(warnings: list[str], stream: Any) -> None:
    for warning in warnings:
        print(f"# warning: {warning}", file=stream)


def cmd_volcano_config(args: argparse.Namespace) -> int:
    settings = _settings(args)
    try:
        config = load_config(settings.config)
    except ConfigError as exc:
        return _fail_config(exc)
    url = args.url or volcano_url(settings)
    try:
        timeout = parse_go_duration(args.http_timeout) / 1e9
        period = parse_go_duration(args.schedule_period) / 1e9
    except DurationError as exc:
        print(f"caldera: invalid duration: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    if (args.nodes is None) != (args.pods is None):
        print("caldera: --nodes and --pods go together", file=sys.stderr)
        return EXIT_CONFIG
    measured = [o for o in ("snapshot_bytes", "bytes_per_pod") if getattr(args, o) is not None]
    if measured and args.nodes is None:
        print(
            f"caldera: --{measured[0].replace('_', '-')} needs --nodes and --pods", file=sys.stderr
        )
        return EXIT_CONFIG
    if args.bodies == "identifiers" and (refusal := identifiers_refusal(config)) is not None:
        print(f"caldera: {refusal}", file=sys.stderr)
        return EXIT_CONFIG
    entry, notes = volcano_entry(
        config, url.rstrip("/"), args.http_timeout, args.ignorable, args.bodies
    )
    flags = scheduler_flags.SchedulerFlags(
        args.scheduler_sharding_mode, args.scheduler_num, tuple(args.node_selector or ())
    )
    following = scheduler_flags.flag_notes(config.sessionState, config.release, flags)
    for refusal in following.refusals:
        print(f"caldera: {refusal}", file=sys.stderr)
    if following.refusals:
        return EXIT_CONFIG
    notes = [*notes, *following.notes]
    if args.merge is not None:
        return print_merged(args.merge, config, entry, notes)
    print(
        "# Add this plugin entry to a tier of volcano-scheduler.conf (Volcano "
        f"{config.release}), in place of the in-tree plugins Caldera now hosts."
    )
    for note in notes:
        print(f"# note: {note}")
    verbs: list[str] = [v for v in VERBS if BY_VERB[v].argument in entry["arguments"]]
    print(f"# {body_limits_note(config, verbs, sized=args.nodes is not None)}")
    if args.nodes is not None:
        cluster = sizing.Cluster(
            args.nodes, args.pods, args.pending_tasks, args.snapshot_bytes, args.bytes_per_pod
        )
        if config.sessionState == SessionStateMode.CLUSTER:
            print(
                "# sizing: no snapshot: Volcano does not marshal or send one; Caldera derives"
                " each session's state from the cluster at the session's first call"
            )
        else:
            print(
                f"# sizing: a snapshot of about {sizing.mib(cluster.body_bytes('onSessionOpen'))}"
                f" and {cluster.extender_open_seconds():.2f}s of Volcano's OnSessionOpen at"
                f" {args.nodes} nodes / {args.pods} pods, from {cluster.snapshot_source()}."
                + (
                    ""
                    if measured
                    else " Pods larger than those: --bytes-per-pod or --snapshot-bytes from"
                    ' caldera_request_body_bytes{verb="onSessionOpen"}.'
                )
            )
        for warning in sizing.warnings(
            cluster, verbs, timeout, config.body_limit, period, config.sessionState
        ):
            print(f"# warning: {warning}")
        for line in sizing_mode_lines(config, cluster, period):
            print(f"# {line}")
    print(yaml.safe_dump([entry], sort_keys=False), end="")
    return 0


def print_merged(
    source: str, config: CalderaConfig, entry: dict[str, Any], notes: list[str]
) -> int:
    """``--merge FILE``: the operator's scheduler conf with Caldera's entry in place; notes and
    warnings go to stderr so stdout is the file to apply."""
    from app.commands.volcano_merge import MergeError, merge

    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text()
    except OSError as exc:
        print(f"caldera: --merge {source}: {exc.strerror}", file=sys.stderr)
        return EXIT_CONFIG
    verbs: list[str] = [v for v in VERBS if BY_VERB[v].argument in entry["arguments"]]
    try:
        merged = merge(text, config, entry, verbs)
    except MergeError as exc:
        print(f"caldera: --merge {source}: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    for note in [*notes, *merged.notes, body_limits_note(config, verbs)]:
        print(f"# note: {note}", file=sys.stderr)
    for warning in merged.warnings:
        print(f"# warning: {warning}", file=sys.stderr)
    print(merged.text, end="")
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from app.commands.replay import ReplayError, render, replay

    settings = _settings(args)
    try:
        config = load_config(settings.config)
    except ConfigError as exc:
        return _fail_config(exc)
    try:
        report = replay(config, Path(args.directory))
    except ReplayError as exc:
        print(f"caldera replay: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    for line in render(report):
        print(line)
    return EXIT_DIFFERS if report.differs else 0


def _asked_url(args: argparse.Namespace) -> str:
    """The running Caldera an asking command asks (:func:`_add_asking_options`)."""
    from app.commands.explain_client import default_url

    if args.url:
        return str(args.url)
    settings = _settings(args)
    return default_url(settings.host, settings.port, settings.ssl_certfile is not None)


def cmd_explain(args: argparse.Namespace) -> int:
    from app.commands.explain_client import ExplainError, fetch, render

    namespace, _, name = args.name.partition("/")
    if not namespace or not name or "/" in name:
        print(f"caldera explain: give <namespace>/<name>, not {args.name!r}", file=sys.stderr)
        return EXIT_CONFIG
    url = _asked_url(args)
    if args.shadow:
        return print_shadow(url, {"task" if args.task else "job": args.name}, args.json, "explain")
    try:
        document = fetch(url, "task" if args.task else "job", args.name)
    except ExplainError as exc:
        print(f"caldera explain: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(document, indent=2, ensure_ascii=False))
    else:
        print("\n".join(render(document)))
    return 0


def cmd_shadow(args: argparse.Namespace) -> int:
    return print_shadow(_asked_url(args), {"diff": "1"} if args.diff else {}, args.json, "shadow")


def print_shadow(url: str, query: dict[str, str], as_json: bool, command: str) -> int:
    """``GET /debug/shadow`` printed for a person (or as JSON): ``caldera shadow`` and
    ``caldera explain NAME --shadow``."""
    from app.commands.explain_client import ExplainError
    from app.commands.shadow_client import fetch, render

    try:
        document = fetch(url, query)
    except ExplainError as exc:
        print(f"caldera {command}: {exc}", file=sys.stderr)
        return 1
    if as_json:
        print(json.dumps(document, indent=2, ensure_ascii=False))
    else:
        print("\n".join(render(document)))
    return 0


def cmd_check_plugin(args: argparse.Namespace) -> int:
    from app.commands.check_plugin import EXIT_PROBLEMS, check, entry_of, render

    try:
        config, entry = entry_of(args.name, args.config)
    except ConfigError as exc:
        return _fail_config(exc)
    # The plugin's own warnings and the release watch's would interleave with the report.
    logging.disable(logging.WARNING)
    try:
        report = check(entry, config)
    finally:
        logging.disable(logging.NOTSET)
    for line in render(report):
        print(line)
    return 0 if report.clean else EXIT_PROBLEMS


def cmd_openapi(args: argparse.Namespace) -> int:
    from app.server.main import create_app
    from app.server.options import ServeOptions

    print(openapi_text(create_app(ServeOptions.of(load_config(None))).openapi()), end="")
    return 0


def openapi_text(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative")
    return value


def serve_epilog() -> str:
    """``serve --help``'s closing text: where else settings come from, and the live reload."""
    options = cli_options()
    env_only = [f"CALDERA_{name.upper()}" for name in Settings.model_fields if name not in options]
    return (
        "Every option above but --record and --record-max-bytes can also be set in the"
        " environment as CALDERA_<OPTION>"
        " (--health-port: CALDERA_HEALTH_PORT); the command line wins. Settings without an"
        f" option: {', '.join(env_only)} (README, 'Configuration'). The --config file is"
        " checked for changes every CALDERA_CONFIG_WATCH_SECONDS (default 2; 0: off): a valid"
        " change applies at the next session boundary, one that fails validation or its"
        " plugins' build is rejected while the running configuration keeps serving (/readyz"
        " says which). Exit status: 0 on SIGTERM, 2 for a configuration or argument error, 3"
        " when a listener cannot bind its address."
    )


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="caldera", description="Volcano scheduler plugins behind the extender protocol."
    )
    root.add_argument("--version", action="version", version=f"caldera {__version__}")
    sub = root.add_subparsers(dest="command", required=True)

    serve = sub.add_parser(
        "serve",
        help="run the HTTP server",
        description="Answer Volcano's extender verbs (and /healthz, /readyz, /metrics) until"
        " SIGTERM.",
        epilog=serve_epilog(),
    )
    _add_setting_options(serve)
    serve.add_argument(
        "--record",
        metavar="DIR",
        help="write every request and answer under DIR for caldera replay (a DIR already in"
        " use gets a new run-<time> subdirectory; bodies hold pod specs: keep DIR private);"
        " a DIR that cannot be written is an ERROR in the log and /readyz, and Caldera serves"
        " without recording",
    )
    serve.add_argument(
        "--record-max-bytes",
        type=_count,
        default=1 << 30,
        help="stop recording after this many bytes of bodies and answers (default 1 GiB)",
    )
    serve.set_defaults(run=cmd_serve)

    check = sub.add_parser(
        "check-config",
        help="validate a configuration file, build its plugins and print it",
        description="Validate a configuration, build its plugins as serve would, and print it"
        " with every default spelled out. Exit 0 when valid, 2 on an error (every error and"
        " warning is printed), 1 on a warning with --strict.",
    )
    check.add_argument(
        "file",
        nargs="?",
        help="the configuration file, - for stdin (default: --config, CALDERA_CONFIG, else"
        " the embedded one)",
    )
    _add_setting_options(check, "config")
    check.add_argument(
        "--strict", action="store_true", help="exit 1 when there is a warning (for CI)"
    )
    check.add_argument(
        "--all-flags",
        action="store_true",
        help="print every enableXxx flag of each plugin, not only those that differ from"
        " Volcano's defaults",
    )
    check.set_defaults(run=cmd_check_config)

    volcano = sub.add_parser(
        "volcano-config", help="print the extender entry for volcano-scheduler.conf"
    )
    _add_setting_options(volcano, "config")
    volcano.add_argument(
        "--url",
        help=f"URL Volcano reaches Caldera at (default http://127.0.0.1:{DEFAULT_PORT}, the"
        " sidecar's; CALDERA_HOST and CALDERA_PORT change it as they change serve's)",
    )
    volcano.add_argument("--http-timeout", default="1s", help="extender.httpTimeout (default 1s)")
    volcano.add_argument("--ignorable", action="store_true", help="set extender.ignorable: true")
    volcano.add_argument(
        "--bodies",
        choices=("objects", "identifiers"),
        default="objects",
        help="identifiers: the entry for a Volcano built with protocol/volcano-identifiers's"
        " patch, calling with identifiers instead of objects (sessionState cluster only;"
        " docs/proposals/extender-identifiers.md)",
    )
    volcano.add_argument(
        "--merge",
        metavar="FILE",
        help="print FILE (a volcano-scheduler.conf; - for stdin) with the in-tree plugins Caldera"
        " hosts replaced by the extender entry; notes and warnings go to stderr",
    )
    volcano.add_argument(
        "--nodes", type=_count, help="cluster nodes: warn about settings too small for them"
    )
    volcano.add_argument("--pods", type=_count, help="cluster pods (with --nodes)")
    measured = volcano.add_mutually_exclusive_group()
    measured.add_argument(
        "--snapshot-bytes",
        type=_count,
        metavar="BYTES",
        help="the onSessionOpen body your cluster sends (caldera_request_body_bytes_sum /"
        " _count for onSessionOpen), instead of the estimate from the benchmark's plain pods",
    )
    measured.add_argument(
        "--bytes-per-pod",
        type=_count,
        metavar="BYTES",
        help="your snapshot's bytes over your pods, nodes' share included: scales the snapshot"
        " to --pods",
    )
    volcano.add_argument(
        "--pending-tasks",
        type=_count,
        default=sizing.BENCH_PENDING_TASKS,
        help="pending tasks per cycle for the cycle estimate (default 50, the benchmark's)",
    )
    volcano.add_argument(
        "--schedule-period", default="1s", help="vc-scheduler --schedule-period (default 1s)"
    )
    volcano.add_argument(
        "--scheduler-sharding-mode",
        metavar="MODE",
        help="vc-scheduler --scheduler-sharding-mode (none, hard, soft; Volcano 1.14+)",
    )
    volcano.add_argument(
        "--scheduler-num",
        type=_count,
        metavar="N",
        help="vc-scheduler's SCHEDULER_NUM, when it runs with MULTI_SCHEDULER_ENABLE=true",
    )
    volcano.add_argument(
        "--node-selector",
        action="append",
        metavar="LABEL:VALUE",
        help="vc-scheduler --node-selector (repeat it as vc-scheduler's)",
    )
    volcano.set_defaults(run=cmd_volcano_config)

    replay = sub.add_parser(
        "replay",
        help="answer a recording (serve --record) again and show where the answers differ",
    )
    replay.add_argument("directory", help="the recording directory")
    _add_setting_options(replay, "config")
    replay.set_defaults(run=cmd_replay)

    explain = sub.add_parser(
        "explain", help="ask a running Caldera why a job (or, with --task, a pod) waits"
    )
    explain.add_argument("name", help="<namespace>/<name>: a Volcano job or PodGroup, or a pod")
    explain.add_argument("--task", action="store_true", help="NAME is a pod, not a job")
    _add_asking_options(explain)
    explain.add_argument(
        "--shadow",
        action="store_true",
        help="what the shadow configuration (serve --shadow) would decide differently about it",
    )
    explain.set_defaults(run=cmd_explain)

    shadow = sub.add_parser(
        "shadow",
        help="ask a running Caldera what its shadow configuration would decide differently",
        description="Print GET /debug/shadow: a summary, then each difference between the"
        " shadow configuration's answers (serve --shadow FILE) and the live ones, with both"
        " configurations' reasons.",
    )
    _add_asking_options(shadow)
    shadow.add_argument(
        "--diff",
        action="store_true",
        help="also print the live configuration file against the shadow file",
    )
    shadow.set_defaults(run=cmd_shadow)

    check_plugin = sub.add_parser(
        "check-plugin",
        help="drive every hook of an installed plugin with captured and generated bodies;"
        " exit 1 on an exception, a wrong type or a p99 over its time budget",
    )
    check_plugin.add_argument("name", help="the plugin's name (as in the tiers)")
    check_plugin.add_argument(
        "--config",
        metavar="FILE",
        help="a configuration naming the plugin: its first entry's arguments and flags are"
        " used (default: the plugin alone, with no arguments)",
    )
    check_plugin.set_defaults(run=cmd_check_plugin)

    openapi = sub.add_parser("openapi", help="print the OpenAPI document")
    openapi.set_defaults(run=cmd_openapi)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command != "serve" and hasattr(signal, "SIGPIPE"):
        # `caldera check-config f | head -1`: a reader that stops early ends the command as it
        # ends cat or grep (SIGPIPE), not with a BrokenPipeError traceback. Not for serve,
        # whose log stream closing must not take the scheduler's sidecar down.
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        code: int = args.run(args)
    except ValidationError as exc:  # a setting's value out of range, or two that clash
        print(f"caldera: invalid setting: {settings_problems(exc, args)}", file=sys.stderr)
        return EXIT_CONFIG
    return code


if __name__ == "__main__":
    sys.exit(main())


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())
