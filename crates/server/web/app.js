// The host's page: a small AHP 1.0 client over the host's own WebSocket.
//
// Rules this file keeps:
// - agent text is never parsed as HTML: every node is built with createElement and filled with
//   textContent (dom.js, whose markdown renderer builds nodes too);
// - the connection token lives in this module's memory only and is stripped from the address bar;
// - no request goes anywhere but the page's own host (the Content-Security-Policy enforces it);
// - the page reduces the subset of actions it shows (reducers.js); where it could disagree with
//   the host (an action it cannot place, a reconnect) it subscribes again and takes the snapshot.

import {
  append,
  formatCost,
  h,
  inline,
  relativeTime,
  renderMarkdown,
  statusLabel,
  text,
  toolIcon,
  usageLine,
} from "./dom.js";
import { STATUS_ARCHIVED, reduceChat, reduceSession } from "./reducers.js";

const ROOT = "ahp-root://";
const ANSWERED = { accept: "answered", decline: "declined", cancel: "cancelled" };
/** How many of a chat's finished turns are drawn at first, and how many more each time. */
const TURN_WINDOW = 30;

// ---------------------------------------------------------------------------------------------
// The token: read once, kept here, removed from the address bar and history.

const token = new URLSearchParams(location.search).get("tkn");
history.replaceState(null, "", location.pathname + location.hash);

// ---------------------------------------------------------------------------------------------
// Small helpers.

function randomId(prefix) {
  const bytes = new Uint8Array(12);
  crypto.getRandomValues(bytes);
  return prefix + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

// ---------------------------------------------------------------------------------------------
// The connection: JSON-RPC 2.0 over the host's WebSocket.

const app = {
  ws: null,
  clientId: randomId("web-"),
  nextRequest: 1,
  nextClientSeq: 1,
  pending: new Map(),
  connected: false,
  retry: 500,
  sessions: new Map(), // session URI → summary
  view: null, // the open session, see openSession
};
// The session list, for tests and curious users (read-only by contract; the socket and with it
// the token stay in this module).
window.agenthost = { sessions: app.sessions };

function request(method, params) {
  return new Promise((resolve, reject) => {
    if (!app.connected) {
      reject(new Error("not connected"));
      return;
    }
    const id = app.nextRequest++;
    app.pending.set(id, { resolve, reject, method });
    app.ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
  });
}

function notify(method, params) {
  if (app.connected) app.ws.send(JSON.stringify({ jsonrpc: "2.0", method, params }));
}

function dispatch(channel, action) {
  if (!app.connected) {
    showNotice("Not connected: the action was not sent.");
    return;
  }
  notify("dispatchAction", { channel, clientSeq: app.nextClientSeq++, action });
}

function connect() {
  if (!token) {
    setConnection("no token", "down");
    showNotice(
      "This page needs its token: open the address `agent-host serve --web` printed " +
        "(http://…/?tkn=…). The token is kept in this tab's memory only, so a reload needs it again.",
    );
    return;
  }
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(`${scheme}//${location.host}/?tkn=${encodeURIComponent(token)}`);
  app.ws = ws;
  setConnection("connecting…", "");
  ws.addEventListener("open", () => {
    app.connected = true;
    initialize().catch((error) => showNotice(`initialize failed: ${error.message}`));
  });
  ws.addEventListener("message", (event) => receive(event.data));
  ws.addEventListener("close", () => {
    const was = app.connected;
    app.connected = false;
    for (const { reject } of app.pending.values()) reject(new Error("the connection closed"));
    app.pending.clear();
    setConnection("disconnected: reconnecting…", "down");
    app.retry = was ? 500 : Math.min(app.retry * 2, 10000);
    setTimeout(connect, app.retry);
  });
}

async function initialize() {
  const result = await request("initialize", {
    channel: ROOT,
    protocolVersions: ["1.0.0"],
    clientId: app.clientId,
    clientInfo: { name: "agenthost-web", version: "1" },
    initialSubscriptions: [ROOT],
  });
  setConnection(`connected (AHP ${result.protocolVersion})`, "live");
  hideNotice();
  const listed = await request("listSessions", { channel: ROOT });
  app.sessions.clear();
  for (const summary of listed.items || []) app.sessions.set(summary.resource, summary);
  renderList();
  // A reconnect starts again from fresh snapshots, of the session the address bar names.
  app.view = null;
  route();
}

function receive(data) {
  let message;
  try {
    message = JSON.parse(data);
  } catch {
    console.warn("the host sent a frame that is not JSON");
    return;
  }
  if (message.id !== undefined && message.method === undefined) {
    const waiting = app.pending.get(message.id);
    if (!waiting) return;
    app.pending.delete(message.id);
    if (message.error) waiting.reject(new Error(`${waiting.method}: ${message.error.message}`));
    else waiting.resolve(message.result);
    return;
  }
  if (message.id !== undefined) {
    // A request from the host (resourceRead, …): this page serves none.
    app.ws.send(
      JSON.stringify({ jsonrpc: "2.0", id: message.id, error: { code: -32601, message: "the web page serves no requests" } }),
    );
    return;
  }
  const params = message.params || {};
  switch (message.method) {
    case "action":
      onEnvelope(params);
      break;
    case "root/sessionAdded":
      app.sessions.set(params.summary.resource, params.summary);
      renderList();
      break;
    case "root/sessionRemoved":
      app.sessions.delete(params.session);
      renderList();
      if (app.view && app.view.uri === params.session) location.hash = "";
      break;
    case "root/sessionSummaryChanged": {
      const summary = app.sessions.get(params.session);
      if (summary) Object.assign(summary, params.changes);
      renderList();
      if (app.view && app.view.uri === params.session) scheduleRender();
      break;
    }
    default:
      break;
  }
}

// ---------------------------------------------------------------------------------------------
// The open session: its state, its chats (the default one and subagent chats), their turns'
// changesets.

async function openSession(uri) {
  closeSession();
  const view = {
    uri,
    session: null,
    chats: new Map(), // chat URI → ChatState
    seen: new Map(), // channel → last applied serverSeq (the snapshot's fromSeq at first)
    early: new Map(), // channel → envelopes that came before its snapshot
    changes: new Map(), // turn id → { channel, state, diff, files, error }
    open: new Set(), // keys of <details> the user opened
    turnSeen: new Map(), // running turn id → performance.now() when the page first saw it
    shown: TURN_WINDOW, // how many of the default chat's finished turns are drawn
  };
  app.view = view;
  renderView();
  const snapshot = await subscribe(view, uri);
  if (snapshot) {
    view.session = snapshot.state;
    settle(view, uri, snapshot);
    await syncChats(view);
  }
  scheduleRender();
}

/** Subscribes `view` to `channel`; envelopes that arrive before the snapshot wait for it. */
async function subscribe(view, channel) {
  view.seen.set(channel, Infinity);
  view.early.set(channel, []);
  try {
    const { snapshot } = await request("subscribe", { channel });
    return app.view === view ? snapshot : null;
  } catch (error) {
    view.seen.delete(channel);
    view.early.delete(channel);
    if (app.view === view) showNotice(`Cannot follow ${channel}: ${error.message}`);
    return null;
  }
}

/** The snapshot of `channel` is in place: apply what came after it. */
function settle(view, channel, snapshot) {
  view.seen.set(channel, snapshot.fromSeq);
  const early = view.early.get(channel) || [];
  view.early.delete(channel);
  for (const envelope of early) onEnvelope(envelope);
}

function closeSession() {
  const view = app.view;
  if (!view) return;
  app.view = null;
  for (const channel of view.seen.keys()) notify("unsubscribe", { channel });
}

/** Subscribes to the chats of the session not yet followed: the default chat and every chat a
 * tool call started (subagents). */
async function syncChats(view) {
  const wanted = (view.session.chats || []).filter(
    (chat) => chat.resource === view.session.defaultChat || (chat.origin && chat.origin.kind === "tool"),
  );
  await Promise.all(
    wanted.filter((chat) => !view.seen.has(chat.resource)).map((chat) => subscribeChat(view, chat.resource)),
  );
}

async function subscribeChat(view, chat) {
  const snapshot = await subscribe(view, chat);
  if (snapshot) {
    view.chats.set(chat, snapshot.state);
    settle(view, chat, snapshot);
  }
  scheduleRender();
}

/** A chat the session no longer has: no longer followed or shown. */
function forgetChat(view, chat) {
  if (!view.seen.has(chat)) return;
  view.seen.delete(chat);
  view.early.delete(chat);
  view.chats.delete(chat);
  notify("unsubscribe", { channel: chat });
}

/** The page could not place an action: it takes the channel's snapshot again. */
function resync(view, channel) {
  if (channel === view.uri) {
    openSession(view.uri);
    return;
  }
  if (view.chats.has(channel)) {
    view.chats.delete(channel);
    subscribeChat(view, channel);
    return;
  }
  for (const [turnId, change] of view.changes) {
    if (change.channel === channel) {
      view.changes.delete(turnId);
      loadChanges(view, turnId);
    }
  }
}

function onEnvelope(envelope) {
  if (envelope.rejectionReason) {
    if (envelope.origin && envelope.origin.clientId === app.clientId) {
      showNotice(`The host refused ${envelope.action.type}: ${envelope.rejectionReason}`);
    }
    return;
  }
  const view = app.view;
  if (!view) return;
  const channel = envelope.channel;
  const seen = view.seen.get(channel);
  if (seen === Infinity) {
    view.early.get(channel)?.push(envelope);
    return;
  }
  if (seen === undefined || envelope.serverSeq <= seen) return;
  view.seen.set(channel, envelope.serverSeq);
  let placed = true;
  if (channel === view.uri) {
    placed = reduceSession(view.session, envelope.action);
    if (placed && envelope.action.type === "session/chatAdded") syncChats(view);
    if (placed && envelope.action.type === "session/chatRemoved") forgetChat(view, envelope.action.chat);
  } else if (view.chats.has(channel)) {
    placed = reduceChat(view.chats.get(channel), envelope.action);
  } else {
    placed = reduceChangeset(view, channel, envelope.action);
  }
  if (!placed) resync(view, channel);
  scheduleRender();
}

function reduceChangeset(view, channel, action) {
  const change = [...view.changes.values()].find((c) => c.channel === channel);
  if (!change || !change.state) return true;
  const state = change.state;
  switch (action.type) {
    case "changeset/statusChanged":
      state.status = action.status;
      if (action.status === "ready") fetchDiff(view, change);
      return true;
    case "changeset/fileSet": {
      const at = state.files.findIndex((f) => f.id === action.file.id);
      if (at >= 0) state.files[at] = action.file;
      else state.files.push(action.file);
      return true;
    }
    case "changeset/fileRemoved":
      state.files = state.files.filter((f) => f.id !== action.id);
      return true;
    case "changeset/cleared":
      state.files = [];
      return true;
    default:
      return true; // not shown here
  }
}

// ---------------------------------------------------------------------------------------------
// Changes of one turn: the turn changeset channel for the file list, `x-checkpoint/diff` for the
// diff text.

function turnChangesetUri(view, turnId) {
  const changeset = (view.session.changesets || []).find((c) => (c.uriTemplate || "").includes("{turnId}"));
  return changeset ? changeset.uriTemplate.replace("{turnId}", encodeURIComponent(turnId)) : null;
}

async function loadChanges(view, turnId) {
  const channel = turnChangesetUri(view, turnId);
  const change = { channel, state: null, diff: null, error: null };
  view.changes.set(turnId, change);
  scheduleRender();
  if (channel) {
    const snapshot = await subscribe(view, channel);
    if (snapshot) {
      change.state = snapshot.state;
      settle(view, channel, snapshot);
    }
  }
  await fetchDiff(view, change, turnId);
  scheduleRender();
}

async function fetchDiff(view, change, turnId) {
  const id = turnId || [...view.changes].find(([, c]) => c === change)?.[0];
  try {
    const result = await request("x-checkpoint/diff", { session: view.uri, turnId: id });
    change.diff = result.diff || "";
    change.files = result.files || [];
  } catch (error) {
    change.error = error.message;
  }
  scheduleRender();
}

// ---------------------------------------------------------------------------------------------
// What the user does.

function sendMessage() {
  const view = app.view;
  const box = document.getElementById("message");
  const message = box.value.trim();
  if (!view || !view.session || !message) return;
  if (!app.connected) {
    showNotice("Not connected: the message was not sent (it is still in the box).");
    return;
  }
  const chatUri = view.session.defaultChat;
  const chat = view.chats.get(chatUri);
  if (!chat) return;
  const body = { text: message, origin: { kind: "user" } };
  if (chat.activeTurn) {
    dispatch(chatUri, { type: "chat/pendingMessageSet", kind: "queued", id: randomId("q-"), message: body });
  } else {
    dispatch(chatUri, {
      type: "chat/turnStarted",
      turnId: randomId("turn-"),
      startedAt: new Date().toISOString(),
      message: body,
    });
  }
  box.value = "";
}

function cancelTurn() {
  const view = app.view;
  if (!view || !view.session) return;
  const chatUri = view.session.defaultChat;
  const turn = view.chats.get(chatUri)?.activeTurn;
  if (!turn) return;
  // On the page's own clock: from when it first saw the turn (never the host's startedAt).
  const duration = Math.round(performance.now() - (view.turnSeen.get(turn.id) ?? performance.now()));
  dispatch(chatUri, { type: "chat/turnCancelled", turnId: turn.id, duration });
}

function answerTool(entry, approved) {
  const tool = entry.toolCall;
  if (tool.status === "pending-result-confirmation") {
    dispatch(entry.chat, {
      type: "chat/toolCallResultConfirmed",
      turnId: entry.turnId,
      toolCallId: tool.toolCallId,
      approved,
    });
    return;
  }
  const answer = approved ? { approved: true, confirmed: "user-action" } : { approved: false, reason: "denied" };
  dispatch(entry.chat, {
    type: "chat/toolCallConfirmed",
    turnId: entry.turnId,
    toolCallId: tool.toolCallId,
    ...answer,
  });
}

function answerInput(entry, response, fields) {
  const action = { type: "chat/inputCompleted", requestId: entry.request.id, response };
  if (response === "accept" && fields.length) {
    action.answers = {};
    for (const [question, input] of fields) {
      action.answers[question.id] = { state: "submitted", value: { kind: "text", value: input.value } };
    }
  }
  dispatch(entry.chat, action);
}

// ---------------------------------------------------------------------------------------------
// Rendering.

let renderQueued = false;
function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    renderView();
    renderList();
  });
}

function setConnection(label, kind) {
  const node = document.getElementById("connection");
  node.textContent = label;
  node.className = `connection ${kind}`;
}

function showNotice(message) {
  const node = document.getElementById("notice");
  node.textContent = message;
  node.hidden = false;
}

function hideNotice() {
  document.getElementById("notice").hidden = true;
}

function renderList() {
  const list = document.getElementById("sessions");
  const summaries = [...app.sessions.values()].sort((a, b) => Date.parse(b.modifiedAt) - Date.parse(a.modifiedAt));
  document.getElementById("empty").hidden = summaries.length > 0;
  replaceKeepingFocus(
    list,
    summaries.map((summary) => {
      const cost = formatCost(summary._meta && summary._meta["agenthost.costUsd"]);
      const current = app.view && app.view.uri === summary.resource;
      return h(
        "li",
        { dataset: { session: summary.resource } },
        h(
          "a",
          {
            href: `#session=${encodeURIComponent(summary.resource)}`,
            "aria-current": current ? "page" : false,
            dataset: { key: summary.resource },
          },
          h("div", { class: "name" }, summary.title || summary.resource),
          h(
            "div",
            { class: "line2" },
            h("span", {}, summary.provider),
            statusLabel(summary.status),
            (summary.status & STATUS_ARCHIVED) !== 0 ? h("span", {}, "archived") : null,
            h("span", { title: summary.modifiedAt }, relativeTime(summary.modifiedAt)),
            cost ? h("span", { class: "cost" }, cost) : null,
          ),
        ),
      );
    }),
  );
}

function renderView() {
  const view = app.view;
  const section = document.getElementById("session");
  document.getElementById("main").classList.toggle("viewing", Boolean(view));
  section.hidden = !view;
  document.getElementById("placeholder").hidden = Boolean(view);
  if (!view) return;
  const summary = app.sessions.get(view.uri);
  const session = view.session;
  document.getElementById("title").textContent = (session && session.title) || (summary && summary.title) || view.uri;
  const facts = [];
  if (session) facts.push(session.provider);
  if (session && session.lifecycle === "failed") facts.push(`failed: ${session.creationError?.message || "unknown error"}`);
  const cost = formatCost(session?._meta?.["agenthost.costUsd"] ?? summary?._meta?.["agenthost.costUsd"]);
  if (cost) facts.push(`cost ${cost} (an estimate)`);
  if (session && session.activity) facts.push(session.activity);
  document.getElementById("facts").textContent = facts.join(" · ");
  if (!session) {
    document.getElementById("transcript").replaceChildren(h("p", { class: "muted" }, "Loading…"));
    return;
  }
  renderConfirmations(view);
  renderTranscript(view);
  const chat = view.chats.get(session.defaultChat);
  const queued = (chat && chat.queuedMessages) || [];
  document
    .getElementById("queued")
    .replaceChildren(...queued.map((m) => h("div", { class: "queued-message" }, `Queued: ${m.message.text}`)));
  document.getElementById("cancel").disabled = !(chat && chat.activeTurn);
  document.getElementById("send").textContent = chat && chat.activeTurn ? "Queue" : "Send";
}

function renderConfirmations(view) {
  const entries = (view.session.inputNeeded || []).filter(
    (entry) => entry.kind === "toolConfirmation" || entry.kind === "chatInput" || entry.kind === "toolAuthentication",
  );
  const node = document.getElementById("confirmations");
  // A keyboard user who just answered a card goes on to the next one, or to the message box.
  const hadFocus = node.contains(document.activeElement);
  // Keep a card (and the focus or the text in it) while its entry is still there.
  const keep = new Map([...node.children].map((card) => [card.dataset.version, card]));
  const cards = entries.map((entry) => keep.get(version(entry)) || confirmationCard(view, entry));
  const fresh = cards.filter((card) => !keep.has(card.dataset.version));
  node.replaceChildren(...cards);
  if (hadFocus && !node.contains(document.activeElement)) {
    (node.querySelector("button, input") || document.getElementById("message")).focus();
  }
  // One short announcement per new question, not the whole card on every render.
  if (fresh.length) document.getElementById("announce").textContent = fresh[0].querySelector(".what").textContent;
}

/** An entry as shown: a tool call that moves to another confirmation gets a new card. */
function version(entry) {
  return `${entry.id}\n${JSON.stringify(entry.toolCall || entry.request || null)}`;
}

function confirmationCard(view, entry) {
  const where = entry.chat !== view.session.defaultChat ? " (in a subagent)" : "";
  if (entry.kind === "chatInput") {
    const request = entry.request;
    const questions = request.questions || [];
    // Text questions get a field each; any other kind is answered in another client.
    const answerable = questions.every((q) => q.kind === "text");
    const fields = answerable
      ? questions.map((question) => [question, h("input", { type: "text", "aria-label": text(question.title || question.message) })])
      : [];
    return h(
      "div",
      { class: "confirmation", dataset: { entry: entry.id, version: version(entry) } },
      h("div", { class: "what" }, `The agent asks${where}: `, inline(text(request.message || ""))),
      fields.map(([question, input]) => h("label", {}, text(question.title || question.message), input)),
      answerable ? null : h("p", { class: "muted" }, "Answer this question in VS Code or the terminal, or decline it here."),
      h(
        "div",
        { class: "buttons" },
        answerable ? h("button", { type: "button", onclick: () => answerInput(entry, "accept", fields) }, "Answer") : null,
        h("button", { type: "button", class: "deny", onclick: () => answerInput(entry, "decline", []) }, "Decline"),
      ),
    );
  }
  if (entry.kind === "toolAuthentication") {
    return h(
      "div",
      { class: "confirmation", dataset: { entry: entry.id, version: version(entry) } },
      h(
        "div",
        { class: "what" },
        `${entry.toolCall.displayName || entry.toolCall.toolName}${where} needs you to sign in to `,
        entry.toolCall.auth?.resource?.resource || "its server",
      ),
      h("p", { class: "muted" }, "Sign in from VS Code: this page cannot pass a token on."),
    );
  }
  const tool = entry.toolCall;
  const input = typeof tool.toolInput === "string" ? tool.toolInput : tool.toolInput?.uri;
  const result = tool.status === "pending-result-confirmation";
  return h(
    "div",
    {
      class: "confirmation",
      dataset: { entry: entry.id, version: version(entry), toolCallId: tool.toolCallId, turnId: entry.turnId },
    },
    h(
      "div",
      { class: "what" },
      `${result ? "Keep the result of" : "Allow"} ${tool.displayName || tool.toolName}${where}? `,
      inline(text(tool.confirmationTitle || tool.invocationMessage)),
    ),
    input ? h("pre", { class: "tool-input" }, input) : null,
    h(
      "div",
      { class: "buttons" },
      h("button", { type: "button", class: "approve", onclick: () => answerTool(entry, true) }, "Approve"),
      h("button", { type: "button", class: "deny", onclick: () => answerTool(entry, false) }, "Deny"),
    ),
  );
}

function renderTranscript(view) {
  const node = document.getElementById("transcript");
  const atBottom = node.scrollHeight - node.scrollTop - node.clientHeight < 40;
  const chat = view.chats.get(view.session.defaultChat);
  if (!chat) {
    node.replaceChildren(h("p", { class: "muted" }, "Loading…"));
    return;
  }
  if (chat.activeTurn && !view.turnSeen.has(chat.activeTurn.id)) view.turnSeen.set(chat.activeTurn.id, performance.now());
  // A long session shows its latest turns; older ones come a window at a time, so that a
  // streaming answer re-renders a bounded page (on a phone too).
  const turns = chat.turns || [];
  const hidden = Math.max(0, turns.length - view.shown);
  const children = [];
  if (hidden > 0) {
    const more = () => {
      view.shown += TURN_WINDOW;
      scheduleRender();
    };
    children.push(
      h(
        "button",
        { type: "button", class: "secondary earlier", dataset: { key: "earlier" }, onclick: more },
        `Show ${Math.min(hidden, TURN_WINDOW)} earlier turns (${hidden} not shown)`,
      ),
    );
  }
  children.push(...turns.slice(hidden).map((turn) => renderTurn(view, chat, turn, false)));
  if (chat.activeTurn) children.push(renderTurn(view, chat, chat.activeTurn, true));
  if (!children.length) children.push(h("p", { class: "muted" }, "No turns yet: send a message."));
  replaceKeepingFocus(node, children);
  if (atBottom) node.scrollTop = node.scrollHeight;
}

function disclosure(view, key, summary, className, build) {
  const open = view.open.has(key);
  const details = h("details", { class: className, open });
  details.append(h("summary", { dataset: { key } }, summary));
  if (open) append(details, [build()]);
  details.addEventListener("toggle", () => {
    if (details.open === view.open.has(key)) return;
    if (details.open) view.open.add(key);
    else view.open.delete(key);
    if (details.open && key.startsWith("changes:") && !view.changes.has(key.slice(8))) loadChanges(view, key.slice(8));
    scheduleRender();
  });
  return details;
}

/** Replaces `node`'s children, keeping the keyboard focus on the element with the same
 * `data-key` (re-rendering must not throw a keyboard user back to the top). */
function replaceKeepingFocus(node, children) {
  const focused = document.activeElement;
  const key = focused && node.contains(focused) ? focused.dataset.key : undefined;
  node.replaceChildren(...children);
  if (key !== undefined) node.querySelector(`[data-key="${CSS.escape(key)}"]`)?.focus();
}

function renderTurn(view, chat, turn, active) {
  const parts = renderParts(view, chat, turn, turn.responseParts || []);
  let footer = null;
  if (active) footer = h("div", { class: "status" }, "working…");
  else if (turn.state === "cancelled") footer = h("div", { class: "status" }, "cancelled");
  const usage = usageLine(turn.usage);
  const changes =
    !active && chat.resource === view.session.defaultChat && turnChangesetUri(view, turn.id) !== null
      ? disclosure(view, `changes:${turn.id}`, "Changed files", "more changes", () => renderChanges(view, turn.id))
      : null;
  return h(
    "article",
    { class: "turn", dataset: { turnId: turn.id, state: active ? "active" : turn.state } },
    h("div", { class: "user" }, turn.message?.text ?? ""),
    h("div", { class: "answer" }, parts),
    footer,
    usage ? h("div", { class: "usage" }, usage) : null,
    changes,
  );
}

function renderParts(view, chat, turn, parts) {
  return parts.map((part, index) => {
    switch (part.kind) {
      case "markdown":
        return h("div", { class: "markdown", dataset: { partId: part.id } }, renderMarkdown(part.content || ""));
      case "reasoning":
        return disclosure(view, `reasoning:${chat.resource}:${turn.id}:${index}`, "Thinking", "reasoning", () =>
          h("div", {}, part.content || ""),
        );
      case "toolCall":
        return renderTool(view, part.toolCall);
      case "systemNotification":
        return h("p", { class: "system" }, text(part.content));
      case "error":
        return h("p", { class: "error" }, `Error: ${part.error?.message || "the turn failed"}`);
      case "inputRequest":
        return h(
          "p",
          { class: "system" },
          "Asked: ",
          inline(text(part.request.message || "")),
          part.response ? ` (${ANSWERED[part.response] || part.response})` : "",
        );
      default:
        return null;
    }
  });
}

function renderTool(view, tool) {
  const failed = tool.status === "completed" && tool.success === false;
  let summary = text(tool.pastTenseMessage || tool.invocationMessage || tool.intention || "");
  if (tool.status === "cancelled") summary = `${summary} (${tool.reason || "cancelled"})`;
  if (tool.status === "pending-confirmation") summary = `${summary} (waiting for approval)`;
  const resultText = (tool.content || [])
    .map((c) => (c.type === "text" ? c.text : c.type === "fileEdit" ? "(file edit)" : ""))
    .filter(Boolean)
    .join("\n");
  const sub = [...view.chats.values()].filter(
    (chat) => chat.origin && chat.origin.kind === "tool" && chat.origin.toolCallId === tool.toolCallId,
  );
  return h(
    "div",
    { class: `tool ${failed ? "failed" : tool.status}`, dataset: { toolCallId: tool.toolCallId, status: tool.status } },
    h(
      "div",
      { class: "line" },
      h("span", { class: "icon", "aria-hidden": "true" }, toolIcon(tool)),
      h("span", {}, h("strong", {}, tool.displayName || tool.toolName || "tool"), " ", inline(summary)),
    ),
    resultText || tool.error
      ? h(
          "div",
          { class: "result" },
          disclosure(view, `result:${tool.toolCallId}`, "Result", "more", () =>
            h("pre", {}, tool.error ? `${tool.error.message}\n${resultText}` : resultText),
          ),
        )
      : null,
    sub.map((chat) => renderSubagent(view, chat)),
  );
}

function renderSubagent(view, chat) {
  const turns = [...(chat.turns || []), ...(chat.activeTurn ? [chat.activeTurn] : [])];
  return h(
    "div",
    { class: "subagent", dataset: { chat: chat.resource } },
    h("div", { class: "subagent-title" }, `↳ ${chat.title || "subagent"}`),
    turns.map((turn) => h("div", { dataset: { turnId: turn.id } }, renderParts(view, chat, turn, turn.responseParts || []))),
  );
}

/** A file URI as a path, relative to the session's working directory when inside it. */
function displayPath(view, uri) {
  let path = uri;
  try {
    path = decodeURIComponent(uri.replace(/^file:\/\//, ""));
  } catch {
    return uri;
  }
  for (const directory of view.session.workingDirectories || []) {
    const root = typeof directory === "string" ? directory : directory.uri || "";
    let base = root;
    try {
      base = decodeURIComponent(root.replace(/^file:\/\//, "")).replace(/\/$/, "");
    } catch {
      continue;
    }
    if (base && path.startsWith(`${base}/`)) return path.slice(base.length + 1);
  }
  return path;
}

function renderChanges(view, turnId) {
  const wrapper = h("div", { class: "changes", dataset: { turnId } });
  const change = view.changes.get(turnId);
  if (!change) return append(wrapper, [h("p", { class: "muted" }, "Loading…")]);
  if (change.error) append(wrapper, [h("p", { class: "error" }, change.error)]);
  const files = change.state?.files || [];
  if (change.state && change.state.status !== "ready") append(wrapper, [h("p", { class: "muted" }, change.state.status)]);
  if (files.length) {
    append(wrapper, [
      h(
        "ul",
        {},
        files.map((file) => {
          const uri = file.edit.after?.uri || file.edit.before?.uri || file.id;
          const stats = file.edit.diff ? ` +${file.edit.diff.added ?? 0} −${file.edit.diff.removed ?? 0}` : "";
          return h("li", {}, displayPath(view, uri), stats);
        }),
      ),
    ]);
  } else if (change.diff === "") {
    append(wrapper, [h("p", { class: "muted" }, "No files changed.")]);
  }
  if (change.diff) {
    append(wrapper, [
      h(
        "pre",
        { class: "diff" },
        change.diff.split("\n").map((line) => {
          const kind = line.startsWith("@@")
            ? "hunk"
            : line.startsWith("+") && !line.startsWith("+++")
              ? "add"
              : line.startsWith("-") && !line.startsWith("---")
                ? "del"
                : "";
          return h("span", { class: kind }, `${line}\n`);
        }),
      ),
    ]);
  }
  return wrapper;
}

// ---------------------------------------------------------------------------------------------
// Routing: `#session=<URI>` opens a session; anything else shows the list.

function route() {
  const match = location.hash.match(/^#session=(.+)$/);
  let uri = null;
  if (match) {
    try {
      uri = decodeURIComponent(match[1]);
    } catch {
      uri = null;
    }
  }
  if (!uri) {
    closeSession();
    renderView();
    renderList();
    return;
  }
  if (app.view && app.view.uri === uri) return;
  if (app.connected) openSession(uri);
  renderList();
}

window.addEventListener("hashchange", () => route());
document.getElementById("send").addEventListener("click", sendMessage);
document.getElementById("cancel").addEventListener("click", cancelTurn);
document.getElementById("message").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    sendMessage();
  }
});
document.getElementById("back").addEventListener("click", (event) => {
  event.preventDefault();
  location.hash = "";
});
setInterval(renderList, 30000); // "2 min ago" stays true
connect();
