// The page's reducers: the subset of AHP 1.0's session and chat actions the page shows, applied
// to the snapshots it subscribed to. Each returns false for an action it cannot place (an unknown
// turn, part or tool call, or an action whose rules are easier to take from a fresh snapshot);
// the page then subscribes again. Actions it does not show are no-ops, as AHP requires of
// unknown ones.

// Status bits (always tested, never compared): Idle 1, Error 2, InProgress 8, InputNeeded 24
// (= 8 | 16), IsRead 32, IsArchived 64.
export const STATUS_ERROR = 2;
export const STATUS_IN_PROGRESS = 8;
export const STATUS_INPUT_NEEDED = 16;
export const STATUS_ARCHIVED = 64;
const TERMINAL_TOOL_STATES = new Set(["completed", "cancelled"]);

export function reduceSession(session, action) {
  switch (action.type) {
    case "session/chatAdded": {
      const chats = session.chats || (session.chats = []);
      const at = chats.findIndex((chat) => chat.resource === action.summary.resource);
      if (at >= 0) chats[at] = action.summary;
      else chats.push(action.summary);
      return true;
    }
    case "session/chatRemoved":
      session.chats = (session.chats || []).filter((chat) => chat.resource !== action.chat);
      if (session.defaultChat === action.chat) delete session.defaultChat;
      return true;
    case "session/chatUpdated": {
      const chat = (session.chats || []).find((c) => c.resource === action.chat);
      if (chat) Object.assign(chat, action.changes);
      return true;
    }
    case "session/defaultChatChanged":
      session.defaultChat = action.defaultChat;
      return false; // a new default chat: take the snapshot, which subscribes to it
    case "session/titleChanged":
      session.title = action.title;
      return true;
    case "session/activityChanged":
      session.activity = action.activity;
      return true;
    case "session/ready":
      session.lifecycle = "ready";
      return true;
    case "session/creationFailed":
      session.lifecycle = "failed";
      session.creationError = action.error;
      return true;
    case "session/inputNeededSet": {
      const list = session.inputNeeded || (session.inputNeeded = []);
      const at = list.findIndex((entry) => entry.id === action.request.id);
      if (at >= 0) list[at] = action.request;
      else list.push(action.request);
      return true;
    }
    case "session/inputNeededRemoved":
      session.inputNeeded = (session.inputNeeded || []).filter((entry) => entry.id !== action.id);
      if (session.inputNeeded.length === 0) delete session.inputNeeded;
      return true;
    case "session/changesetsChanged":
      session.changesets = action.changesets;
      return true;
    case "session/metaChanged":
      session._meta = action._meta;
      return true;
    case "session/configChanged":
      if (!session.config) return false;
      session.config.values = action.replace
        ? { ...action.config }
        : { ...(session.config.values || {}), ...action.config };
      return true;
    case "session/isArchivedChanged":
      session.status = action.isArchived ? session.status | STATUS_ARCHIVED : session.status & ~STATUS_ARCHIVED;
      return true;
    default:
      return true; // not shown here
  }
}

function turnParts(chat, turnId) {
  return chat.activeTurn && chat.activeTurn.id === turnId ? chat.activeTurn.responseParts : null;
}

/** A turn-scoped action for a turn that is not the running one: a no-op in AHP. */
function otherTurn(chat, action) {
  return !chat.activeTurn || chat.activeTurn.id !== action.turnId;
}

function findTool(chat, turnId, toolCallId) {
  const parts = turnParts(chat, turnId);
  const part = parts && parts.find((p) => p.kind === "toolCall" && p.toolCall.toolCallId === toolCallId);
  return part ? part.toolCall : null;
}

/** The states each tool-call action applies in; in any other it is a no-op. */
const TOOL_ACTION_STATES = {
  "chat/toolCallDelta": ["streaming"],
  "chat/toolCallReady": ["streaming", "pending-confirmation", "running"],
  "chat/toolCallConfirmed": ["pending-confirmation"],
  "chat/toolCallComplete": ["pending-confirmation", "running", "auth-required"],
  "chat/toolCallResultConfirmed": ["pending-result-confirmation"],
  "chat/toolCallContentChanged": ["running"],
  "chat/toolCallAuthRequired": ["running"],
  "chat/toolCallAuthResolved": ["auth-required"],
};

/** Applies a tool-call action to its call: false when the call is unknown in the running
 * turn (the page missed something), true (and nothing changed) when AHP says it is a no-op. */
function reduceTool(chat, action) {
  if (otherTurn(chat, action)) return true;
  const tool = findTool(chat, action.turnId, action.toolCallId);
  if (!tool) return false;
  if (!TOOL_ACTION_STATES[action.type].includes(tool.status)) return true;
  switch (action.type) {
    case "chat/toolCallReady": {
      const { type, turnId, toolCallId, confirmed, ...fields } = action;
      Object.assign(tool, fields);
      tool.status = confirmed ? "running" : "pending-confirmation";
      if (confirmed) tool.confirmed = confirmed;
      break;
    }
    case "chat/toolCallConfirmed":
      if (action.approved) {
        tool.status = "running";
        tool.confirmed = action.confirmed;
      } else {
        tool.status = "cancelled";
        tool.reason = action.reason || "denied";
      }
      break;
    case "chat/toolCallComplete":
      if (tool.status === "auth-required" && action.result?.success !== false) break;
      Object.assign(tool, action.result);
      tool.status = action.requiresResultConfirmation ? "pending-result-confirmation" : "completed";
      break;
    case "chat/toolCallResultConfirmed":
      tool.status = action.approved ? "completed" : "cancelled";
      if (!action.approved) tool.reason = "result-denied";
      break;
    case "chat/toolCallContentChanged":
      tool.content = action.content;
      break;
    case "chat/toolCallAuthRequired":
      tool.status = "auth-required";
      tool.auth = action.auth;
      break;
    case "chat/toolCallAuthResolved":
      tool.status = "running";
      delete tool.auth;
      break;
    default:
      break;
  }
  return true;
}

export function reduceChat(chat, action) {
  switch (action.type) {
    case "chat/turnStarted":
      chat.activeTurn = {
        id: action.turnId,
        startedAt: action.startedAt,
        message: action.message,
        responseParts: [],
      };
      if (action.queuedMessageId) {
        chat.queuedMessages = (chat.queuedMessages || []).filter((m) => m.id !== action.queuedMessageId);
        if (chat.queuedMessages.length === 0) delete chat.queuedMessages; // absent when empty
        if (chat.steeringMessage && chat.steeringMessage.id === action.queuedMessageId) delete chat.steeringMessage;
      }
      return true;
    case "chat/delta":
    case "chat/reasoning": {
      if (otherTurn(chat, action)) return true;
      const parts = turnParts(chat, action.turnId);
      const kind = action.type === "chat/delta" ? "markdown" : "reasoning";
      const part = parts && parts.find((p) => p.kind === kind && p.id === action.partId);
      if (!part) return false;
      part.content += action.content;
      return true;
    }
    case "chat/responsePart": {
      if (otherTurn(chat, action)) return true;
      const parts = turnParts(chat, action.turnId);
      if (action.part.kind !== "error") parts.push(action.part);
      return true;
    }
    case "chat/usage":
      if (otherTurn(chat, action)) return true;
      chat.activeTurn.usage = action.usage;
      return true;
    case "chat/turnComplete":
    case "chat/turnCancelled":
    case "chat/error": {
      if (otherTurn(chat, action)) return true;
      const turn = chat.activeTurn;
      for (const part of turn.responseParts) {
        if (part.kind === "toolCall" && !TERMINAL_TOOL_STATES.has(part.toolCall.status)) {
          const { content, confirmed, selectedOption, ...kept } = part.toolCall;
          part.toolCall = { ...kept, status: "cancelled", reason: "skipped" };
        }
      }
      if (action.type === "chat/error") turn.responseParts.push({ kind: "error", ...action.part });
      const state = { "chat/turnComplete": "complete", "chat/turnCancelled": "cancelled", "chat/error": "error" };
      (chat.turns || (chat.turns = [])).push({ ...turn, duration: action.duration, state: state[action.type] });
      delete chat.activeTurn;
      return true;
    }
    case "chat/toolCallStart": {
      if (otherTurn(chat, action)) return true;
      const parts = turnParts(chat, action.turnId);
      parts.push({
        kind: "toolCall",
        toolCall: {
          toolCallId: action.toolCallId,
          toolName: action.toolName,
          displayName: action.displayName,
          intention: action.intention,
          status: "streaming",
        },
      });
      return true;
    }
    case "chat/toolCallDelta":
    case "chat/toolCallReady":
    case "chat/toolCallConfirmed":
    case "chat/toolCallComplete":
    case "chat/toolCallResultConfirmed":
    case "chat/toolCallContentChanged":
    case "chat/toolCallAuthRequired":
    case "chat/toolCallAuthResolved":
      return reduceTool(chat, action);
    case "chat/inputRequested": {
      if (otherTurn(chat, action)) return true;
      const parts = turnParts(chat, action.turnId);
      const at = parts.findIndex((p) => p.kind === "inputRequest" && p.request.id === action.request.id);
      if (at >= 0) parts[at] = { kind: "inputRequest", request: action.request };
      else parts.push({ kind: "inputRequest", request: action.request });
      return true;
    }
    case "chat/inputCompleted": {
      const parts = (chat.activeTurn && chat.activeTurn.responseParts) || [];
      const part = parts.find((p) => p.kind === "inputRequest" && p.request.id === action.requestId);
      if (part) part.response = action.response;
      return true;
    }
    case "chat/pendingMessageSet":
      if (action.kind === "steering") {
        chat.steeringMessage = { id: action.id, message: action.message };
      } else {
        const queue = chat.queuedMessages || (chat.queuedMessages = []);
        const at = queue.findIndex((m) => m.id === action.id);
        if (at >= 0) queue[at] = { id: action.id, message: action.message };
        else queue.push({ id: action.id, message: action.message });
      }
      return true;
    case "chat/pendingMessageRemoved":
      if (action.kind === "steering") {
        if (chat.steeringMessage && chat.steeringMessage.id === action.id) delete chat.steeringMessage;
      } else {
        chat.queuedMessages = (chat.queuedMessages || []).filter((m) => m.id !== action.id);
        if (chat.queuedMessages.length === 0) delete chat.queuedMessages;
      }
      return true;
    case "chat/titleChanged":
      chat.title = action.title;
      return true;
    case "chat/activityChanged":
      chat.activity = action.activity;
      return true;
    case "chat/truncated":
    case "chat/turnsLoaded":
    case "chat/queuedMessagesReordered":
    case "chat/turnResume":
      return false; // rare: the snapshot is simpler than the rules
    default:
      return true; // not shown here
  }
}
