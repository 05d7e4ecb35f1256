"""`kop groups list` and `kop groups describe GROUP`: the admin HTTP's /v1/groups,
as tables for people or as JSON (`--json`) for scripts."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import click

from kop.ops.admin_access import AdminTokenError, read_token

_ADMIN = click.option(
    "--admin-url",
    default="http://localhost:9094",
    show_default=True,
    envvar="KOP_ADMIN_URL",
    help="kop's admin HTTP",
)
_JSON = click.option("--json", "as_json", is_flag=True, help="print JSON instead of a table")
_TOKEN = click.option(
    "--token",
    envvar="KOP_ADMIN_TOKEN",
    default="",
    help="kop's admin_token, or a JWT when kop authorizes (it then shows what the "
    "token's role may see); or file:///path to either. Without: only from loopback, "
    "where kop has neither",
)


def _get(admin_url: str, path: str, token: str = "") -> Any:
    url = admin_url.rstrip("/") + path
    try:
        token = read_token(token, "--token")
    except AdminTokenError as exc:
        raise click.ClickException(str(exc)) from None
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as r:
            return json.load(r)
    except urllib.error.HTTPError as exc:
        detail = json.loads(exc.read() or b"{}").get("error", exc.reason)
        raise click.ClickException(f"{url}: {detail}") from exc
    except OSError as exc:
        raise click.ClickException(f"cannot reach kop's admin HTTP at {url}: {exc}") from exc


def table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    cells = [[("-" if r.get(c) is None else str(r.get(c))) for c in columns] for r in rows]
    widths = [max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.upper().ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(line.rstrip() for line in lines)


@click.group()
def groups() -> None:
    """Consumer groups: state, members, committed offsets and lag."""


@groups.command("list")
@_ADMIN
@_JSON
@_TOKEN
def list_groups(admin_url: str, as_json: bool, token: str) -> None:
    """Every group kop knows (that the token's role may see), with its state. A group
    of another namespace than kop's default is listed as //tenant/namespace/group."""
    found = _get(admin_url, "/v1/groups", token)["groups"]
    if as_json:
        click.echo(json.dumps(found, indent=2))
        return
    click.echo(table(found, ["group", "state", "protocol", "generation", "members"]))


@groups.command("describe")
@click.argument("group")
@_ADMIN
@_JSON
@_TOKEN
def describe_group(group: str, admin_url: str, as_json: bool, token: str) -> None:
    """A group's members with their assignments, and per partition the committed
    offset, the log end offset and the lag."""
    found = _get(admin_url, "/v1/groups/" + urllib.parse.quote(group, safe=""), token)
    if as_json:
        click.echo(json.dumps(found, indent=2))
        return
    click.echo(
        f"group {found['group']}: {found['state']}, protocol {found['protocol'] or '-'}, "
        f"generation {found['generation']}, {found['members']} members"
    )
    members = [{**m, "assignment": _assignment(m["assignment"])} for m in found["member_details"]]
    if members:
        click.echo()
        click.echo(table(members, ["member_id", "group_instance_id", "client_id", "client_host",
                                   "assignment"]))  # fmt: skip
    click.echo()
    click.echo(table(found["offsets"], ["topic", "partition", "committed_offset",
                                        "log_end_offset", "lag"]))  # fmt: skip


def _assignment(by_topic: dict[str, list[int]] | None) -> str:
    if not by_topic:
        return "-"
    return " ".join(f"{t}:{','.join(map(str, sorted(ps)))}" for t, ps in sorted(by_topic.items()))
