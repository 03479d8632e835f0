#!/usr/bin/env python3
"""A deterministic ACP agent on the official Python SDK (`agent-client-protocol`
on PyPI, imported as `acp`), for acp-tee's tests with real peers.

On every `session/prompt` it plays one scripted turn:

1. an `agent_thought_chunk`, then a few `agent_message_chunk`s;
2. a `plan`;
3. a `tool_call` (pending, with title, kind, locations), then a
   `tool_call_update` to `in_progress`;
4. a `session/request_permission` for that tool call, offering allow and
   reject options (skipped with `--no-permission`);
5. on the answer, a `tool_call_update` `completed` (allowed) or `failed`
   (rejected or cancelled) with content, the plan again with its entries
   done, and the PromptResponse with stopReason `end_turn` and the turn's
   token usage (`usage`, unstable in ACP).

A `session/cancel` at any point ends the turn: the tool call, if started,
is updated `failed`, and the prompt answered with stopReason `cancelled`
(the agent stops waiting for a pending permission answer). A `cancelled`
permission outcome without a `session/cancel` (what yopo answers when no
option allows, and acpx when its `--timeout` runs out) is taken as a
refusal: the turn still ends `end_turn`.

Options:
  --no-permission   run the tool call without asking
  --reject-only     offer only reject options (a client that approves
                    whatever allows then has nothing to select)
  --until-cancel    after the tool call is in progress, wait for
                    `session/cancel` instead of asking permission
  --tool-kind KIND  the tool call's kind (default `edit`; clients such as
                    acpx approve `read` and `search` on their own but ask a
                    person, on a terminal, about an edit)
  --usage-update    also send a `usage_update` before the response (unstable
                    in ACP: clients on older schemas, yopo 11 among them,
                    reject the whole notification as a parse error)

Everything is deterministic: ids, texts and token counts do not depend on
time or randomness, so two runs record the same messages.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    Agent,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    plan_entry,
    run_agent,
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
)
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    Implementation,
    PermissionOption,
    ToolCallLocation,
    Usage,
    UsageUpdate,
)

AGENT_NAME = "acp-tee-py-agent"
AGENT_VERSION = "1.0.0"

# What the turn says, chunk by chunk.
THOUGHT = "The user wants README.md looked at; that needs permission first."
MESSAGE_CHUNKS = ["Hello from the Python SDK agent. ", "I will look at ", "README.md ", "for you."]
# The kinds ACP defines for a tool call.
TOOL_KINDS = {"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"}
TOOL_FILE = "README.md"
TOOL_OUTPUT = "# README\nfirst line of the file"
# The turn's token counts (reported in usage_update and the PromptResponse).
INPUT_TOKENS = 120
OUTPUT_TOKENS = 48
THOUGHT_TOKENS = 16
CONTEXT_SIZE = 200_000


class PyAgent(Agent):
    """One scripted turn per prompt; see the module doc."""

    def __init__(
        self, permission: bool, reject_only: bool, usage_update: bool, tool_kind: str, until_cancel: bool
    ) -> None:
        self._conn: Client | None = None
        self._until_cancel = until_cancel
        self._tool_kind = tool_kind
        self._tool_title = f"{tool_kind.capitalize()} {TOOL_FILE}"
        self._permission = permission
        self._reject_only = reject_only
        self._usage_update = usage_update
        self._sessions = 0
        self._turns = 0
        # Session id -> the event set by session/cancel for its running turn.
        self._cancelled: dict[str, asyncio.Event] = {}
        # Session id -> the id of the tool call its running turn started.
        self._started_tool: dict[str, str] = {}

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None, **kwargs: Any
    ) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(load_session=False),
            agent_info=Implementation(name=AGENT_NAME, title="acp-tee test agent", version=AGENT_VERSION),
        )

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        self._sessions += 1
        return NewSessionResponse(session_id=f"py-session-{self._sessions}")

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        return None

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        if event := self._cancelled.get(session_id):
            event.set()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        if session_id in self._cancelled:
            raise RequestError.invalid_request({"reason": "a turn is already running in this session"})
        cancelled = asyncio.Event()
        self._cancelled[session_id] = cancelled
        try:
            turn = asyncio.ensure_future(self._turn(session_id))
            stop = asyncio.ensure_future(cancelled.wait())
            done, _ = await asyncio.wait({turn, stop}, return_when=asyncio.FIRST_COMPLETED)
            if turn in done:
                stop.cancel()
                return turn.result()
            turn.cancel()
            try:
                await turn
            except asyncio.CancelledError:
                pass
            tool_id = self._started_tool.get(session_id)
            if self._conn is not None and tool_id is not None:
                await self._conn.session_update(
                    session_id,
                    update_tool_call(
                        tool_id,
                        status="failed",
                        content=[tool_content(text_block("the turn was cancelled"))],
                    ),
                )
            return PromptResponse(stop_reason="cancelled")
        finally:
            del self._cancelled[session_id]
            self._started_tool.pop(session_id, None)

    async def _turn(self, session_id: str) -> PromptResponse:
        assert self._conn is not None
        self._turns += 1
        send = self._conn.session_update
        tool_id = f"call-{self._turns}"
        path = os.path.join(os.getcwd(), TOOL_FILE)

        await send(session_id, update_agent_thought_text(THOUGHT))
        for chunk in MESSAGE_CHUNKS:
            await send(session_id, update_agent_message_text(chunk))
        await send(session_id, update_plan(self._plan(done=False)))
        await send(
            session_id,
            start_tool_call(
                tool_id,
                self._tool_title,
                kind=self._tool_kind,
                status="pending",
                locations=[ToolCallLocation(path=path, line=1)],
                raw_input={"path": path},
            ),
        )
        await send(session_id, update_tool_call(tool_id, status="in_progress"))
        self._started_tool[session_id] = tool_id
        if self._until_cancel:
            # prompt() cancels this task when session/cancel comes.
            await asyncio.Event().wait()

        allowed = True
        if self._permission:
            answer = await self._conn.request_permission(
                session_id=session_id,
                tool_call=update_tool_call(tool_id, title=self._tool_title, kind=self._tool_kind, status="pending"),
                options=self._options(),
            )
            outcome = answer.outcome
            allowed = isinstance(outcome, AllowedOutcome) and outcome.option_id.startswith("allow")

        if allowed:
            await send(
                session_id,
                update_tool_call(
                    tool_id,
                    status="completed",
                    content=[tool_content(text_block(TOOL_OUTPUT))],
                    raw_output={"bytes": len(TOOL_OUTPUT)},
                ),
            )
            await send(session_id, update_agent_message_text(" Done."))
        else:
            await send(
                session_id,
                update_tool_call(
                    tool_id, status="failed", content=[tool_content(text_block("permission was not granted"))]
                ),
            )
            await send(session_id, update_agent_message_text(" I was not allowed to."))
        await send(session_id, update_plan(self._plan(done=True)))
        if self._usage_update:
            await send(
                session_id,
                UsageUpdate(session_update="usage_update", used=INPUT_TOKENS + OUTPUT_TOKENS, size=CONTEXT_SIZE),
            )
        return PromptResponse(
            stop_reason="end_turn",
            usage=Usage(
                input_tokens=INPUT_TOKENS,
                output_tokens=OUTPUT_TOKENS,
                thought_tokens=THOUGHT_TOKENS,
                total_tokens=INPUT_TOKENS + OUTPUT_TOKENS + THOUGHT_TOKENS,
            ),
        )

    def _options(self) -> list[PermissionOption]:
        reject = [
            PermissionOption(option_id="reject-once", name="Reject", kind="reject_once"),
            PermissionOption(option_id="reject-always", name="Always reject", kind="reject_always"),
        ]
        if self._reject_only:
            return reject
        allow = [
            PermissionOption(option_id="allow-once", name="Allow", kind="allow_once"),
            PermissionOption(option_id="allow-always", name="Always allow", kind="allow_always"),
        ]
        return allow + reject

    @staticmethod
    def _plan(done: bool) -> list[Any]:
        status = "completed" if done else "pending"
        return [
            plan_entry(f"Ask for permission on {TOOL_FILE}", priority="high", status="completed"),
            plan_entry(f"Work on {TOOL_FILE}", priority="medium", status=status),
        ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-permission", action="store_true", help="run the tool call without asking")
    parser.add_argument("--reject-only", action="store_true", help="offer only reject options")
    parser.add_argument("--until-cancel", action="store_true", help="wait for session/cancel")
    parser.add_argument("--tool-kind", default="edit", choices=sorted(TOOL_KINDS), help="the tool call's kind")
    parser.add_argument("--usage-update", action="store_true", help="also send a usage_update")
    args = parser.parse_args()
    agent = PyAgent(
        permission=not args.no_permission,
        reject_only=args.reject_only,
        usage_update=args.usage_update,
        tool_kind=args.tool_kind,
        until_cancel=args.until_cancel,
    )
    asyncio.run(run_agent(agent, use_unstable_protocol=True))


if __name__ == "__main__":
    sys.exit(main())
