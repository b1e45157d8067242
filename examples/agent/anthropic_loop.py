"""A real model's loop over the calendar tools with Anthropic's SDK (not run in CI).

    pip install anthropic
    ANTHROPIC_API_KEY=... CALENDAR_API_KEY=calsk_... python examples/agent/anthropic_loop.py \
        "Find 30 minutes with nobody booked on Monday morning and book 'Call with Ana'"
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import anthropic
from mcp_session import calendar, call

MODEL = os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-5")


async def main(task: str) -> None:
    model = anthropic.AsyncAnthropic()
    async with calendar() as client:
        listed = await client.list_tools()
        tools = [
            {"name": t.name, "description": t.description or "", "input_schema": t.input_schema}
            for t in listed.tools
        ]
        system = client.instructions or ""  # the server's instructions: how to use the tools
        messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
        for _ in range(20):  # a bound on the turns
            reply = await model.messages.create(
                model=MODEL,
                max_tokens=2048,
                system=system or anthropic.NOT_GIVEN,
                tools=tools,
                messages=messages,
            )
            messages.append({"role": "assistant", "content": reply.content})
            if reply.stop_reason != "tool_use":
                print("".join(b.text for b in reply.content if b.type == "text"))
                return
            results = []
            for block in reply.content:
                if block.type == "tool_use":
                    text, refused = await call(client, block.name, dict(block.input))
                    print(f"-> {block.name} {block.input}\n<- {text[:200]}")
                    results.append(
                        {
                            "type": "tool_result",
                            "tool_use_id": block.id,
                            "content": text,
                            "is_error": refused,
                        }
                    )
            messages.append({"role": "user", "content": results})


if __name__ == "__main__":
    asyncio.run(main(" ".join(sys.argv[1:]) or "What do I have tomorrow?"))
