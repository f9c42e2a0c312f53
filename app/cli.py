"""The ``caldera`` command: serve, check-config, volcano-config, replay, explain, check-plugin,
openapi."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import ssl
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import yaml
from pydantic import ValidationError

from app import __version__, shared_path, sizing
from app.config import CalderaConfig, ConfigError, effective_config, load_config, release_note
from app.config_checks import argument_warnings, log_problems
from app.session import SessionManager
from app.settings import Settings, cli_options
from plugins.api.extension_points import BY_VERB, VERBS, Rule
from schemas.goduration import DurationError, parse_go_duration
from schemas.requests import OnSessionOpenRequest

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


def _settings(args: argparse.Namespace) -> Settings:
    overrides = {
        name: getattr(args, name) for name in cli_options() if getattr(args, name, None) is not None
    }
    return Settings(**overrides)


def _add_setting_options(parser: argparse.ArgumentParser, *only: str) -> None:
    """The ``Settings`` fields marked ``cli`` as options (``only``: just those), their types,
    choices and help from the field's declaration; the default stays the setting's own (an
    unset option leaves the environment's value or the default in charge)."""
    for name, help in cli_options().items():
        if only and name not in only:
            continue
        annotation = Settings.model_fields[name].annotation
        kinds = [a for a in get_args(annotation) or (annotation,) if a is not type(None)]
        kwargs: dict[str, Any] = {"dest": name, "help": help}
        if kinds == [int]:
            kwargs["type"] = int
        elif get_origin(annotation) is Literal:
            kwargs["choices"] = list(get_args(annotation))
        parser.add_argument(f"--{name.replace('_', '-')}", **kwargs)


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from app import listeners
    from app.buffers import BodyBuffers
    from app.config_watch import load_with_origin
    from app.connections import ConnectionLimits, guarded_protocol
    from app.logs import configure_logging
    from app.main import create_app

    settings = _settings(args)
    try:
        config, origin = load_with_origin(settings.config)
    except ConfigError as exc:
        return _fail_config(exc)
    for option, path in (
        ("--ssl-certfile", settings.ssl_certfile),
        ("--ssl-keyfile", settings.ssl_keyfile),
        ("--ssl-client-ca", settings.ssl_client_ca),
    ):
        if path is not None and not Path(path).is_file():
            print(f"caldera: {option} {path}: no such file", file=sys.stderr)
            return EXIT_CONFIG
    configure_logging(settings.log_level, settings.log_format)
    log_problems(config, logging.getLogger("caldera"))
    recorder = None
    if args.record is not None:
        from app.record import Recorder, RecordError

        try:
            recorder = Recorder(args.record, args.record_max_bytes)
        except RecordError as exc:
            print(f"caldera: {exc}", file=sys.stderr)
            return EXIT_CONFIG
    app = create_app(
        config,
        recorder,
        body_timeout=settings.body_timeout_seconds,
        origin=origin,
        watch_interval=settings.config_watch_seconds,
    )
    limits = ConnectionLimits(
        settings.header_timeout_seconds,
        settings.max_header_bytes,
        config.maxRequestBytes,
        {
            path: config.body_limit(verb)
            for path, verb in app.state.extender.routes().items()
            if config.body_limit(verb) != config.maxRequestBytes
        },
    )
    metrics = app.state.metrics
    buffers = BodyBuffers(
        kept=metrics.body_buffer.set,
        outcome=lambda outcome: metrics.body_buffers.labels(outcome).inc(),
    )
    common: dict[str, Any] = {
        "log_config": None,
        "access_log": False,
        "log_level": settings.log_level,
        "timeout_keep_alive": settings.keep_alive_seconds,
        "timeout_graceful_shutdown": settings.shutdown_seconds,
        "server_header": False,
        # Volcano, the kubelet and Prometheus call Caldera directly, never through a proxy:
        # uvicorn's X-Forwarded-For rewriting would be one more layer per call for nothing.
        "proxy_headers": False,
    }
    verbs_config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        http=guarded_protocol(limits, buffers),
        ssl_certfile=settings.ssl_certfile,
        ssl_keyfile=settings.ssl_keyfile,
        ssl_ca_certs=settings.ssl_client_ca,
        ssl_cert_reqs=ssl.CERT_REQUIRED if settings.ssl_client_ca else ssl.CERT_NONE,
        **common,
    )
    server = uvicorn.Server(verbs_config)
    health = None
    if settings.health_port is not None:
        # Plain HTTP: the kubelet's httpGet probes and a PodMonitor speak it, and nothing on
        # this listener steers a decision. No lifespan: the app's backgrounds start once.
        health_app = listeners.HealthListener(app, f"{settings.host}:{settings.port}")
        health = uvicorn.Server(
            uvicorn.Config(
                health_app,
                host=settings.health_host,
                port=settings.health_port,
                http=guarded_protocol(replace(limits, max_body_bytes=0)),
                lifespan="off",
                **common,
            )
        )
    exposure = listeners.exposure_warning(settings.host, settings.ssl_certfile is not None)
    if exposure is not None:
        logging.getLogger("caldera").warning("%s", exposure)
    # uvicorn drains in-flight requests on SIGTERM, then re-raises the signal under the handler
    # that was in place before it started; make that one a clean exit, as Kubernetes expects.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    listeners.run(server, health, verbs_config.get_loop_factory())
    return 0 if server.started else 1


def cmd_check_config(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.file)
    except ConfigError as exc:
        return _fail_config(exc)
    # Every problem is collected and printed below: the plugins' own log lines would repeat
    # them on stderr.
    logging.disable(logging.WARNING)
    try:
        warnings = argument_warnings(config)
    finally:
        logging.disable(logging.NOTSET)
    flags = "every flag" if args.all_flags else "the flags that differ from Volcano's defaults"
    print(
        f"# {args.file}: valid. Effective configuration: defaults spelled out, each plugin's"
        f" arguments as it reads them, {flags}:"
    )
    print(f"# {release_note(config)}")
    for warning in warnings:
        print(f"# warning: {warning}")
    print(yaml.safe_dump(effective_config(config, args.all_flags), sort_keys=False), end="")
    return 0


def needed_verbs(config: CalderaConfig) -> tuple[list[str], list[str]]:
    """The verbs the configured plugins answer, and notes on those this release cannot send.

    Asks the objects the server uses: a session opened on an empty snapshot, whose framework
    knows which plugins take part in each verb for this release and these flags."""
    release = config.release
    framework = SessionManager(config).open(OnSessionOpenRequest()).framework
    wanted = {verb for verb, names in framework.active_plugins().items() if names}
    for entry in config.entries:
        wanted.update(entry.cls.required_verbs(release))
        if entry.cls.needs_snapshot:
            wanted.update(("onSessionOpen", "onSessionClose"))
    notes: list[str] = []
    verbs: list[str] = []
    for verb in VERBS:
        if verb not in wanted:
            continue
        if verb == "jobEnqueued" and not release.admission_follows_vote:
            notes.append(
                f"Volcano {release} has no jobEnqueued verb: Caldera accounts an admission"
                " when it answers jobEnqueueable"
            )
        elif not release.has_verb(verb):
            notes.append(f"Volcano {release} cannot send {verb}; that part stays unused")
        else:
            verbs.append(verb)
    verbs, folded = shared_path.fold_verbs(release, verbs)
    return verbs, notes + folded


def volcano_entry(
    config: CalderaConfig, url: str, timeout: str, ignorable: bool
) -> tuple[dict[str, Any], list[str]]:
    verbs, notes = needed_verbs(config)
    arguments: dict[str, Any] = {"extender.urlPrefix": url, "extender.httpTimeout": timeout}
    for verb in verbs:
        arguments[BY_VERB[verb].argument] = verb
    if config.managedResources:
        if config.release.has_managed_resources:
            arguments["extender.managedResources"] = list(config.managedResources)
        else:
            notes.append(
                f"Volcano {config.release} has no extender.managedResources; Caldera"
                " still applies the filter to what it receives"
            )
    arguments["extender.ignorable"] = ignorable
    return {"name": "extender", "arguments": arguments}, notes


def cmd_volcano_config(args: argparse.Namespace) -> int:
    settings = _settings(args)
    try:
        config = load_config(settings.config)
    except ConfigError as exc:
        return _fail_config(exc)
    url = args.url or f"http://{settings.host}:{settings.port}"
    try:
        timeout = parse_go_duration(args.http_timeout) / 1e9
        period = parse_go_duration(args.schedule_period) / 1e9
    except DurationError as exc:
        print(f"caldera: invalid duration: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    if (args.nodes is None) != (args.pods is None):
        print("caldera: --nodes and --pods go together", file=sys.stderr)
        return EXIT_CONFIG
    entry, notes = volcano_entry(config, url.rstrip("/"), args.http_timeout, args.ignorable)
    if args.merge is not None:
        return print_merged(args.merge, config, entry, notes)
    print(
        "# Add this plugin entry to a tier of volcano-scheduler.conf (Volcano "
        f"{config.release}), in place of the in-tree plugins Caldera now hosts."
    )
    for note in notes:
        print(f"# note: {note}")
    verbs = [v for v in VERBS if BY_VERB[v].argument in entry["arguments"]]
    print(f"# {body_limits_note(config, verbs)}")
    if args.nodes is not None:
        cluster = sizing.Cluster(args.nodes, args.pods, args.pending_tasks)
        for warning in sizing.warnings(cluster, verbs, timeout, config.body_limit, period):
            print(f"# warning: {warning}")
    print(yaml.safe_dump([entry], sort_keys=False), end="")
    return 0


def print_merged(
    source: str, config: CalderaConfig, entry: dict[str, Any], notes: list[str]
) -> int:
    """``--merge FILE``: the operator's scheduler conf with Caldera's entry in place; notes and
    warnings go to stderr so stdout is the file to apply."""
    from app.volcano_merge import MergeError, merge

    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text()
    except OSError as exc:
        print(f"caldera: --merge {source}: {exc.strerror}", file=sys.stderr)
        return EXIT_CONFIG
    verbs = [v for v in VERBS if BY_VERB[v].argument in entry["arguments"]]
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


def body_limits_note(config: CalderaConfig, verbs: list[str]) -> str:
    """The body limits Caldera applies to ``verbs``, said next to the extender entry: Volcano
    knows nothing of them, and a snapshot over its limit switches Caldera off."""
    limits = "; ".join(
        f"{setting} = {config.body_limit(group[0])} ({sizing.mib(config.body_limit(group[0]))})"
        f" for {', '.join(group)}"
        for setting, group in _verbs_by_limit(verbs).items()
    )
    text = f"Caldera accepts request bodies up to {limits or 'no verb'}."
    if any(BY_VERB[verb].rule is Rule.OPEN for verb in verbs):
        text += (
            " A larger snapshot is refused with 413 and Volcano runs that cycle without"
            " Caldera's plugins: size it with --nodes N --pods P."
        )
    return text


def _verbs_by_limit(verbs: list[str]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for verb in verbs:
        grouped.setdefault(BY_VERB[verb].body_limit, []).append(verb)
    return grouped


def cmd_replay(args: argparse.Namespace) -> int:
    from app.replay import ReplayError, render, replay

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


def cmd_explain(args: argparse.Namespace) -> int:
    from app.explain_client import ExplainError, default_url, fetch, render

    namespace, _, name = args.name.partition("/")
    if not namespace or not name or "/" in name:
        print(f"caldera explain: give <namespace>/<name>, not {args.name!r}", file=sys.stderr)
        return EXIT_CONFIG
    if args.url:
        url = args.url
    else:
        settings = _settings(args)
        url = default_url(settings.host, settings.port, settings.ssl_certfile is not None)
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


def cmd_check_plugin(args: argparse.Namespace) -> int:
    from app.check_plugin import EXIT_PROBLEMS, check, entry_of, render

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
    from app.main import create_app

    print(openapi_text(create_app(load_config(None)).openapi()), end="")
    return 0


def openapi_text(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative")
    return value


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="caldera", description="Volcano scheduler plugins behind the extender protocol."
    )
    root.add_argument("--version", action="version", version=f"caldera {__version__}")
    sub = root.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the HTTP server")
    _add_setting_options(serve)
    serve.add_argument(
        "--record",
        metavar="DIR",
        help="write every request and answer to DIR (a new or empty directory; bodies hold"
        " pod specs: keep DIR private) for caldera replay",
    )
    serve.add_argument(
        "--record-max-bytes",
        type=_count,
        default=1 << 30,
        help="stop recording after this many bytes of bodies and answers (default 1 GiB)",
    )
    serve.set_defaults(run=cmd_serve)

    check = sub.add_parser("check-config", help="validate a configuration file and print it")
    check.add_argument("file")
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
    volcano.add_argument("--url", help="URL Volcano reaches Caldera at (default from host/port)")
    volcano.add_argument("--http-timeout", default="1s", help="extender.httpTimeout (default 1s)")
    volcano.add_argument("--ignorable", action="store_true", help="set extender.ignorable: true")
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
    volcano.add_argument(
        "--pending-tasks",
        type=_count,
        default=sizing.BENCH_PENDING_TASKS,
        help="pending tasks per cycle for the cycle estimate (default 50, the benchmark's)",
    )
    volcano.add_argument(
        "--schedule-period", default="1s", help="vc-scheduler --schedule-period (default 1s)"
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
    explain.add_argument(
        "--url", help="Caldera's verb listener (default: this pod's, from --host/--port)"
    )
    explain.add_argument("--json", action="store_true", help="print the whole answer as JSON")
    _add_setting_options(explain, "host", "port")
    explain.set_defaults(run=cmd_explain)

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
    except ValidationError as exc:  # a CALDERA_* environment value of the wrong type
        problems = "; ".join(
            f"CALDERA_{'_'.join(str(p) for p in e['loc']).upper()}: {e['msg']}"
            for e in exc.errors()
        )
        print(f"caldera: invalid setting: {problems}", file=sys.stderr)
        return EXIT_CONFIG
    return code


if __name__ == "__main__":
    sys.exit(main())


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())
