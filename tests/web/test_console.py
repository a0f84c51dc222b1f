"""Parley Console, end to end in Chromium: the demo user's turn arrives live, waits for an
approval, completes, and reads back the same after a reload; another user cannot open it."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID, uuid4

import httpx
import pytest
from playwright.async_api import Locator, Page, Route, WebSocketRoute, expect

from local.seed import DEMO_EMAIL, DEMO_PASSWORD
from local.stack import CONSOLE_DEMO_MESSAGE, RunningStack, banner, password_session
from shared.db import Database
from shared.services import Services, load_settings
from shared.usecases.retention import apply_retention
from tests.web.conftest import Tab, Wire, screenshot


async def sign_in(page: Page, email: str, password: str) -> None:
    """Email and password, through Supabase Auth (the local stack's, at /auth/v1)."""
    form = page.get_by_role("region", name="Sign in").locator("form").first
    await form.get_by_role("textbox", name="Email").fill(email)
    await form.get_by_label("Password").fill(password)
    await form.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_role("button", name="Sign out")).to_be_visible()


async def sign_in_as_demo_user(page: Page) -> None:
    await sign_in(page, DEMO_EMAIL, DEMO_PASSWORD)


async def start_demo_turn(page: Page) -> None:
    await page.get_by_role("link", name="+ New chat").click()
    await page.get_by_role("button", name=re.compile("^Try the demo")).click()
    await page.get_by_role("button", name="Send").click()


async def history(page: Page) -> dict[str, Any]:
    """What the session view shows: turns, the plan's steps, each thread's messages."""
    return {
        "messages": await page.locator(".conversation .msg .text").all_inner_texts(),
        "turns": await page.locator(".conversation .turn").evaluate_all(
            "turns => turns.map(t => t.dataset.status)"
        ),
        "steps": await page.locator(".plan-graph .step").evaluate_all(
            "steps => steps.map(s => [s.dataset.step, s.dataset.status])"
        ),
        "threads": await page.locator(".thread").evaluate_all(
            "threads => threads.map(t => [t.dataset.step, "
            "[...t.querySelectorAll('.agent-msg')].map(m => m.dataset.type)])"
        ),
    }


def session_id_of(page: Page) -> str:
    found = re.search(r"#/s/([0-9a-f-]{36})$", page.url)
    assert found, page.url
    return found.group(1)


async def test_the_console_link_the_stack_prints_plays_the_demo_turn_live(
    tab: Tab, stack: RunningStack, db: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    """Opened as `dev.py run` prints it, with no clicks: the demo turn arrives live, waits for
    an approval, completes, and reads back the same after a reload."""
    page, wire = tab.page, tab.wire
    banner(stack)
    printed = re.search(r"^  console +(\S+)", capsys.readouterr().out, re.MULTILINE)
    assert printed is not None
    await page.goto("about:blank")
    await page.goto(printed.group(1))  # a first visit: no stored sign-in, a fresh page load

    await expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    await expect(page).to_have_url(re.compile(r"#/s/[0-9a-f-]{36}$"))  # the session's own link
    # The plan graph and two executors' threads fill in from the private channel.
    graph = page.locator(".plan-graph .step")
    await expect(graph).to_have_count(3)
    executors = page.locator(
        ".thread", has=page.get_by_role("heading", name=re.compile("Executor"))
    )
    await expect(executors).to_have_count(2)
    for thread in await executors.all():
        await expect(thread.locator('[data-type="tool_result"]')).to_be_visible()
    await screenshot(page, "live")  # at dev.py run's pace: the executors are still at work
    for thread in await executors.all():
        await expect(thread.locator('[data-type="completion"]')).to_be_visible()
    await expect(graph.locator('[data-status="completed"]')).to_have_count(2)
    live_threads = {
        e["data"]["thread_id"]
        for e in wire.of_type("agent_message")
        if e["data"]["message_type"] == "completion"
    }
    assert len(live_threads) >= 2, "the executors' completions did not come over Realtime"
    # Joined before the turn began: the whole turn came over the channel, from its first event.
    assert wire.of_type("status_update")[0]["data"]["status"] == "thinking"
    assert {1, 2} <= {e["data"]["step_number"] for e in wire.of_type("step_started")}
    assert [j["status"] for j in wire.joins] == ["ok"]  # joined the private channel at once

    # The destructive call waits for the user.
    card = page.get_by_role("group", name=re.compile("Approval needed"))
    await expect(card).to_contain_text("delete_calendar_event")
    await expect(page.locator('.step[data-step="3"]')).to_have_attribute(
        "data-status", "awaiting_approval"
    )
    await screenshot(page, "approval")
    event_id = re.search(r'"event_id": "([0-9a-f-]{36})"', await card.inner_text())
    assert event_id is not None
    await card.get_by_role("button", name="Approve").click()

    # Deciding resumes the plan; it completes and the answer streams into the conversation.
    turn = page.locator(".conversation .turn").last
    await expect(turn).to_have_attribute("data-status", "completed")
    await expect(graph.locator('[data-status="completed"]')).to_have_count(3)
    answer = turn.locator(".msg.assistant")
    await expect(answer).to_contain_text("(demo) The tools returned")
    await expect(answer.get_by_role("button", name="Fork here")).to_be_visible()  # stored, read
    await expect(card).to_have_count(0)
    assert wire.of_type("done")[-1]["data"]["status"] == "completed"
    assert {e["data"]["step_number"] for e in wire.of_type("step_started")} == {1, 2, 3}
    async with db.service() as conn:
        cur = await conn.execute(
            "SELECT deleted_at FROM calendar_events WHERE id = %s", (UUID(event_id.group(1)),)
        )
        row = await cur.fetchone()
    assert row is not None and row["deleted_at"] is not None
    await expect(page.locator(".totals")).to_contain_text(re.compile(r"[1-9][\d,]* in"))
    await screenshot(page, "dialogue")

    before, reads = await history(page), []
    page.on("request", lambda request: reads.append(request.url))
    await page.reload()
    await expect(page.locator(".conversation .turn").last).to_have_attribute(
        "data-status", "completed"
    )
    await expect(page.locator(".thread")).to_have_count(len(before["threads"]))
    assert await history(page) == before
    # Opening a session reads its turns in one call, not one per turn.
    session = session_id_of(page)
    assert [url for url in reads if "/plans" in url] == [
        f"{stack.url}/chat/sessions/{session}/plans?after_seq=0&limit=100"
    ]
    assert before["messages"][0] == CONSOLE_DEMO_MESSAGE


@dataclass
class Network:
    """The page's Realtime socket through a route the test controls: cut it, keep it down
    (every reconnect attempt fails), and — `replay` False — take replay out of every join the
    page sends (as a server whose messages have passed their retention would replay none)."""

    offline: bool = False
    replay: bool = True
    wire: Wire = field(default_factory=Wire)
    """What the page heard over the routed socket."""
    live: list[tuple[WebSocketRoute, WebSocketRoute]] = field(default_factory=list)

    @classmethod
    async def install(cls, page: Page, **options: Any) -> Network:
        network = cls(**options)
        await page.route_web_socket(lambda url: "/realtime/v1/websocket" in url, network._route)
        await page.reload()  # the route takes effect from the next page load
        return network

    async def _route(self, route: WebSocketRoute) -> None:
        if self.offline:
            await route.close(code=1011)
            return
        server = route.connect_to_server()

        def forward(message: str | bytes) -> None:
            self.wire.frame(message)
            route.send(message)

        def join(message: str | bytes) -> None:
            if isinstance(message, str) and not self.replay and '"phx_join"' in message:
                frame = json.loads(message)
                frame[4].get("config", {}).get("broadcast", {}).pop("replay", None)
                message = json.dumps(frame)
            server.send(message)

        server.on_message(forward)
        route.on_message(join)
        self.live.append((route, server))

    async def cut(self) -> None:
        """The network goes down: the socket drops, and reconnecting fails until `offline`
        is False again."""
        self.offline = True
        for route, server in self.live:
            await route.close(code=1011)
            await server.close()
        self.live.clear()


async def approve_elsewhere(stack: RunningStack, plan_id: str | None) -> None:
    """The user approves the plan's call elsewhere (another tab, another device); the plan
    resumes and completes."""
    session = await password_session(stack.supabase_url, stack.anon_key, DEMO_EMAIL, DEMO_PASSWORD)
    headers = {"Authorization": f"Bearer {session['access_token']}"}
    async with httpx.AsyncClient(base_url=f"{stack.url}/agent_planner", headers=headers) as http:
        [waiting] = (await http.get(f"/plans/{plan_id}/approvals")).json()["approvals"]
        decided = await http.post(
            f"/plans/{plan_id}/approvals/{waiting['id']}", json={"decision": "approve"}
        )
    assert decided.json()["plan"]["status"] == "completed"


async def a_turn_waiting_then_cut_off(page: Page, network: Network) -> tuple[Locator, str | None]:
    """The demo turn, waiting for approval, when the network goes down: its approval card and
    plan id."""
    await sign_in_as_demo_user(page)
    await start_demo_turn(page)
    card = page.get_by_role("group", name=re.compile("Approval needed"))
    await expect(card).to_be_visible()
    plan_id = await page.locator(".conversation .turn").last.get_attribute("data-plan-id")
    await network.cut()
    await expect(page.get_by_role("status").filter(has_text="Reconnecting")).to_be_visible()
    return card, plan_id


async def test_events_missed_while_disconnected_are_caught_up_from_the_timeline(
    tab: Tab, stack: RunningStack
) -> None:
    """With nothing to replay, the tables alone catch the view up after a reconnect."""
    page = tab.page
    network = await Network.install(page, replay=False)
    card, plan_id = await a_turn_waiting_then_cut_off(page, network)
    await approve_elsewhere(stack, plan_id)
    heard_before = len(network.wire.events)
    network.offline = False

    turn = page.locator(".conversation .turn").last
    await expect(page.get_by_role("status").filter(has_text="Live")).to_be_visible()
    await expect(turn).to_have_attribute("data-status", "completed")
    await expect(page.locator('.step[data-status="completed"]')).to_have_count(3)
    await expect(card).to_have_count(0)
    await expect(turn.locator(".msg.assistant")).to_contain_text("(demo) The tools returned")
    assert "done" not in [e["type"] for e in network.wire.events[heard_before:]]  # read, not heard
    assert network.wire.replayed == []


async def test_a_reconnect_is_caught_up_by_replay_before_the_tables_answer(
    tab: Tab, stack: RunningStack
) -> None:
    """The channel is joined anew with replay since the last event applied: the events sent
    while the socket was down arrive first and bring the view up to date while the catch-up's
    reads of the tables are still unanswered; the reads then add the stored rows."""
    page = tab.page
    network = await Network.install(page)
    card, plan_id = await a_turn_waiting_then_cut_off(page, network)
    await approve_elsewhere(stack, plan_id)
    held: list[Route] = []
    released = False

    async def hold(route: Route) -> None:  # asked, and not answered until released below
        if released:
            await route.continue_()
        else:
            held.append(route)

    tables = re.compile(r"/(chat/sessions|agent_planner/plans)/")
    await page.route(tables, hold)
    heard_before = len(network.wire.events)
    network.offline = False

    turn = page.locator(".conversation .turn").last
    await expect(page.get_by_role("status").filter(has_text="Live")).to_be_visible()
    await expect(turn).to_have_attribute("data-status", "completed")
    await expect(page.locator('.step[data-status="completed"]')).to_have_count(3)
    await expect(card).to_have_count(0)
    answer = turn.locator(".msg.assistant")
    await expect(answer).to_contain_text("(demo) The tools returned")  # `done`'s answer
    assert held, "the catch-up did not ask the tables"
    replayed = network.wire.replayed
    assert {"step_started", "step_completed", "done"} <= {e["type"] for e in replayed}
    assert all(e in network.wire.events[heard_before:] for e in replayed)
    seqs = [e["seq"] for e in replayed]
    assert len(seqs) == len(set(seqs)) <= 25

    released = True
    for route in held:
        await route.continue_()
    await expect(answer.get_by_role("button", name="Fork here")).to_be_visible()  # the stored row
    await expect(page.locator('.step[data-status="completed"]')).to_have_count(3)


async def test_another_user_cannot_open_the_demo_users_session_by_url(
    tab: Tab, stack: RunningStack, db: Database
) -> None:
    page = tab.page
    await sign_in_as_demo_user(page)
    await page.get_by_role("link", name="+ New chat").click()
    await page.get_by_role("textbox", name="Message").fill("Hello!")
    await page.get_by_role("button", name="Send").click()
    await expect(page.locator(".conversation .turn").last).to_have_attribute(
        "data-status", "completed"
    )
    session_url = page.url
    await page.get_by_role("button", name="Sign out").click()

    # A second user, made with the one command `dev.py run` prints for it.
    eve = f"eve-{uuid4().hex[:8]}@example.com"
    await add_user(stack, eve, "eves-password")
    await sign_in(page, eve, "eves-password")
    await expect(page.get_by_text(eve)).to_be_visible()
    heard = len(tab.wire.events)
    await page.goto(session_url)
    await page.reload()

    await expect(page.get_by_role("heading", name="Session not found")).to_be_visible()
    await expect(page.get_by_text("Hello!")).to_have_count(0)
    await expect(page.locator(".sessions li")).to_have_count(0)
    assert tab.wire.events[heard:] == []


async def test_a_send_that_fails_on_the_network_is_retried_with_the_same_id(tab: Tab) -> None:
    page = tab.page
    await sign_in_as_demo_user(page)
    await page.get_by_role("link", name="+ New chat").click()
    sends: list[dict[str, Any]] = []

    async def drop_first(route: Route) -> None:
        sends.append(dict(route.request.post_data_json or {}))
        if len(sends) == 1:
            await route.abort("internetdisconnected")
        else:
            await route.continue_()

    await page.route("**/chat/chat", drop_first)
    await page.get_by_role("textbox", name="Message").fill("Hello there")
    await page.get_by_role("button", name="Send").click()
    await expect(page.get_by_role("alert")).to_contain_text("Not sent")
    await page.get_by_role("button", name="Retry").click()

    await expect(page.locator(".conversation .turn").last).to_have_attribute(
        "data-status", "completed"
    )
    assert len(sends) == 2 and sends[0]["client_message_id"] == sends[1]["client_message_id"]
    await expect(page.locator(".msg.user")).to_have_count(1)


async def test_a_message_while_a_turn_waits_offers_to_cancel_it(tab: Tab) -> None:
    page = tab.page
    await sign_in_as_demo_user(page)
    await start_demo_turn(page)
    await expect(page.get_by_role("button", name="Approve")).to_be_visible()

    await page.get_by_role("textbox", name="Message").fill("Hello!")
    await page.get_by_role("button", name="Send").click()
    await expect(page.get_by_role("alert")).to_contain_text("waiting for your decision")
    await page.get_by_role("button", name="Cancel the running turn").click()
    await expect(page.locator(".conversation .turn").first).to_have_attribute(
        "data-status", "cancelled"
    )
    await page.get_by_role("button", name="Send again").click()
    await expect(page.locator(".conversation .turn")).to_have_count(2)
    await expect(page.locator(".conversation .turn").last).to_have_attribute(
        "data-status", "completed"
    )


async def test_sessions_are_renamed_forked_archived_and_deleted(tab: Tab) -> None:
    page = tab.page
    await sign_in_as_demo_user(page)
    await page.get_by_role("link", name="+ New chat").click()
    await page.get_by_role("textbox", name="Message").fill("Hello!")
    await page.get_by_role("button", name="Send").click()
    await expect(page.locator(".conversation .turn").last).to_have_attribute(
        "data-status", "completed"
    )
    await page.get_by_role("button", name="Rename").click()
    await page.get_by_role("textbox", name="Session title").fill("Greetings")
    await page.get_by_role("button", name="Save").click()
    await expect(page.get_by_role("heading", name="Greetings")).to_be_visible()
    await expect(page.locator(".sessions [aria-current]")).to_contain_text("Greetings")

    original = page.url
    await page.locator(".msg.user").get_by_role("button", name="Fork here").click()
    await expect(page).not_to_have_url(original)
    await expect(page.locator(".msg.user")).to_have_text(re.compile("Hello!"))
    await expect(page.locator(".msg.assistant")).to_have_count(0)  # forked at the question

    await page.goto(original)
    await page.get_by_role("button", name="Archive").click()
    await expect(page.get_by_role("heading", name="Greetings (archived)")).to_be_visible()
    await expect(
        page.locator(".sessions .title").get_by_text("Greetings", exact=True)
    ).to_have_count(0)
    page.once("dialog", lambda dialog: dialog.accept())
    await page.get_by_role("button", name="Delete").click()
    await expect(page.get_by_role("heading", name="Welcome")).to_be_visible()
    await page.goto(original)
    await expect(page.get_by_role("heading", name="Session not found")).to_be_visible()


async def test_a_turn_whose_detail_retention_deleted_says_what_is_gone(
    tab: Tab, database_url: str, db: Database
) -> None:
    """Weeks later, retention has deleted the agents' dialogue of a turn: where its threads
    were, the console says what was deleted and which setting did it."""
    page = tab.page
    await sign_in_as_demo_user(page)
    await start_demo_turn(page)
    await page.get_by_role("button", name="Reject").click()  # the calendar stays for the others
    turn = page.locator(".conversation .turn").last
    await expect(turn).to_have_attribute("data-status", "completed")
    await expect(page.locator(".thread")).not_to_have_count(0)
    plan_id = await turn.get_attribute("data-plan-id")
    assert plan_id is not None
    async with db.service() as conn:  # the turn ended 40 days ago
        await conn.execute(
            "UPDATE agent_plans SET completed_at = completed_at - interval '40 days' WHERE id = %s",
            (UUID(plan_id),),
        )
    deleted = await apply_retention(Services(load_settings(database_url=database_url), db=db))
    assert deleted["dialogue"] > 0

    await page.reload()
    gone = page.get_by_role("list", name="Deleted by retention")
    await expect(gone.locator('[data-what="dialogue"]')).to_have_text(
        "The agents' dialogue of this turn (their messages) was deleted 30 days after the turn "
        "ended, as RETENTION_DIALOGUE_DAYS says."
    )
    await expect(gone.locator('[data-what="tool_rounds"]')).to_contain_text(
        "RETENTION_TOOL_ROUNDS_DAYS"
    )
    await expect(page.locator(".thread .agent-msg")).to_have_count(0)
    await expect(page.locator(".thread")).to_have_count(3)  # kept with the runs (90 days)
    await expect(page.locator(".plan-graph .step")).to_have_count(3)  # the plan itself stays


async def test_operators_see_cost_and_step_duration_charts(tab: Tab) -> None:
    page = tab.page
    await sign_in_as_demo_user(page)  # locally, the demo user is an operator
    await start_demo_turn(page)  # executor steps to chart
    await expect(page.get_by_role("button", name="Approve")).to_be_visible()
    await page.get_by_role("link", name="Operations").click()

    charts = page.locator(".chart")
    await expect(charts).to_have_count(2)
    await expect(charts.locator("canvas")).to_have_count(2)  # drawn by uPlot
    await expect(page.locator(".chart .u-legend").first).to_contain_text("parley-demo")
    await expect(page.locator(".tiles")).to_contain_text("Agent runs")
    await screenshot(page, "operations")
    await page.get_by_text("Executor step durations: the figures").click()
    await expect(page.locator("table").last).to_contain_text("parley-demo")


async def test_the_local_config_offers_supabase_auth_and_no_secret(stack: RunningStack) -> None:
    async with httpx.AsyncClient() as http:
        config = (await http.get(f"{stack.url}/config.json")).json()
        minted = await http.post(f"{stack.url}/local/demo-session")
    assert config["auth"] == {
        "mode": "supabase",
        "methods": ["password", "signup"],
        "demoUser": {"email": DEMO_EMAIL, "password": DEMO_PASSWORD},
    }
    assert config["supabaseUrl"] == stack.supabase_url
    assert config["supabaseAnonKey"].startswith("sb_publishable_")
    assert config["demoMessage"] == CONSOLE_DEMO_MESSAGE
    assert stack.jwt_secret not in str(config) and stack.keys.secret not in str(config)
    assert minted.status_code != 200  # no token is minted outside Auth any more


async def add_user(stack: RunningStack, email: str, password: str) -> None:
    """Run the command `dev.py run` prints to add a user, as printed."""
    command = stack.signup_command(email, password)
    process = await asyncio.create_subprocess_exec(
        *shlex.split(command), stdout=asyncio.subprocess.PIPE
    )
    out, _ = await process.communicate()
    assert process.returncode == 0 and json.loads(out)["user"]["email"] == email, out


FOCUSED = """() => {
  const e = document.activeElement;
  if (!e || e === document.body) return null;
  const style = getComputedStyle(e);
  return { name: e.getAttribute('aria-label') || e.innerText || e.getAttribute('placeholder') || '',
           tag: e.tagName, id: e.id, outline: style.outlineStyle, width: style.outlineWidth };
}"""


async def tab_to(page: Page, name: str, *, limit: int = 80) -> dict[str, Any]:
    """Press Tab until the focused element's accessible text contains `name`; that element.
    Each stop must show its focus (an outline), as keyboard users need to see where they are."""
    seen: list[str] = []
    for _ in range(limit):
        await page.keyboard.press("Tab")
        focused = await page.evaluate(FOCUSED)
        if focused is None:
            continue
        assert focused["outline"] != "none" and focused["width"] != "0px", (
            f"no visible focus on {focused}"
        )
        if name in focused["name"]:
            return dict(focused)
        seen.append(focused["name"][:40])
    raise AssertionError(f"Tab never reached {name!r}; it stopped at {seen}")


async def test_the_demo_turn_can_be_played_and_approved_with_the_keyboard_alone(
    tab: Tab,
) -> None:
    """Sign in, start the demo turn, send it, move from the plan graph to a step's thread and
    approve the destructive call without the mouse; states are words, not only colours."""
    page = tab.page
    await tab_to(page, "Sign in as the demo user")
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    await tab_to(page, "New chat")
    await page.keyboard.press("Enter")
    await tab_to(page, "Try the demo")
    await page.keyboard.press("Enter")  # fills the message and focuses the text box
    assert (await page.evaluate(FOCUSED))["tag"] == "TEXTAREA"
    await page.keyboard.press("Enter")  # sends

    await expect(page.get_by_role("button", name="Approve")).to_be_visible()
    await expect(page.locator('.step[data-step="1"]')).to_have_attribute(
        "aria-label", re.compile(r"^Step 1, executor, completed: ")
    )
    await tab_to(page, "Step 1, executor")
    await page.keyboard.press("Enter")
    assert (await page.evaluate(FOCUSED))["id"] == "thread-1"  # Enter moves to the thread
    await tab_to(page, "Approve")
    await page.keyboard.press("Enter")

    await expect(page.locator(".conversation .turn").last).to_have_attribute(
        "data-status", "completed"
    )
    await expect(page.locator('.step[data-step="3"]')).to_contain_text("completed")


async def test_a_new_user_signs_up_and_their_session_is_what_the_functions_and_channel_get(
    tab: Tab, stack: RunningStack, db: Database
) -> None:
    """ "Create an account" signs up through supabase-js against the stack's Auth (confirmed at
    once, as locally and on projects without email confirmation); the session's access token is
    what the functions and the private channel get."""
    page = tab.page
    ana = f"ana-{uuid4().hex[:8]}@example.com"
    await page.get_by_text("Create an account").click()
    signup = page.get_by_role("form", name="Sign up")
    await signup.get_by_role("textbox", name="Email").fill(ana)
    await signup.get_by_label("New password").fill("correct horse")
    await signup.get_by_role("button", name="Sign up").click()
    await expect(page.get_by_text(ana)).to_be_visible()

    await page.get_by_role("link", name="+ New chat").click()
    await page.get_by_role("textbox", name="Message").fill("Hello!")
    await page.get_by_role("button", name="Send").click()
    await expect(page.locator(".conversation .turn").last).to_have_attribute(
        "data-status", "completed"
    )
    assert [j["status"] for j in tab.wire.joins] == ["ok"]  # the private channel took the token
    async with db.service() as conn:
        cur = await conn.execute(
            "SELECT count(*) AS n FROM chat_sessions s JOIN auth.users u ON u.id = s.user_id "
            "WHERE u.email = %s",
            (ana,),
        )
        row = await cur.fetchone()
    assert row is not None and row["n"] == 1  # the functions saw Ana, not the demo user

    await page.get_by_role("button", name="Sign out").click()
    await sign_in(page, ana, "correct horse")  # and she signs in again with her password
    await page.get_by_role("button", name="Sign out").click()
    form = page.get_by_role("region", name="Sign in").locator("form").first
    await form.get_by_role("textbox", name="Email").fill(ana)
    await form.get_by_label("Password").fill("wrong horse")
    await form.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_role("alert")).to_have_text("Invalid login credentials")


async def test_a_deployed_console_sends_magic_links(tab: Tab, stack: RunningStack) -> None:
    """With `auth.methods` offering it, the console asks Supabase Auth (`/otp`, answered here at
    the wire: the local Auth sends no email) for a link, and never to create a user."""
    page = tab.page
    async with httpx.AsyncClient() as http:
        local = (await http.get(f"{stack.url}/config.json")).json()
    config = {**local, "auth": {"mode": "supabase", "methods": ["password", "magic_link"]}}
    asked: list[Any] = []
    cors = {"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Headers": "*"}

    async def otp(route: Route) -> None:
        if route.request.method != "OPTIONS":
            asked.append(route.request.post_data_json)
        await route.fulfill(status=200, json={}, headers=cors)

    await page.route("**/config.json", lambda route: route.fulfill(json=config))
    await page.route("**/auth/v1/otp**", otp)
    await page.reload()
    await expect(page.get_by_role("button", name="Sign in as the demo user")).to_have_count(0)
    magic = page.locator("form").filter(has=page.get_by_role("button", name="Email me"))
    await magic.get_by_role("textbox", name="Email").fill("ana@x.test")
    await magic.get_by_role("button", name="Email me a sign-in link").click()
    await expect(page.get_by_role("status")).to_contain_text("Check your email")
    assert asked[0]["email"] == "ana@x.test"
    assert asked[0]["create_user"] is False  # the console signs in; it never signs up this way
