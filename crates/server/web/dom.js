// DOM helpers, formatting, and a markdown renderer that builds nodes: agent text is never
// parsed as HTML. Every node is made with createElement and filled with textContent.

import { STATUS_ERROR, STATUS_IN_PROGRESS, STATUS_INPUT_NEEDED } from "./reducers.js";

/** An element with attributes and children (strings become text nodes, never HTML). */
export function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function text(value) {
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value;
  if (typeof value === "object" && typeof value.markdown === "string") return value.markdown;
  return JSON.stringify(value);
}

export function relativeTime(iso) {
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return "";
  const seconds = Math.max(0, Math.round((Date.now() - then) / 1000));
  if (seconds < 60) return "just now";
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  return new Date(then).toLocaleDateString();
}

export function formatCost(value) {
  if (typeof value !== "number" || !Number.isFinite(value)) return null;
  return value >= 0.01 ? `$${value.toFixed(2)}` : `$${value.toFixed(4)}`;
}

// Markdown, rendered to nodes: paragraphs, headings, lists, quotes, fenced code, inline code,
// bold, italics and http(s) links. Anything else is text.

export function renderMarkdown(source) {
  const out = [];
  const lines = source.replace(/\r\n/g, "\n").split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^\s*(```|~~~)(.*)$/);
    if (fence) {
      const body = [];
      i += 1;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
      i += 1;
      out.push(h("pre", {}, h("code", {}, body.join("\n"))));
      continue;
    }
    if (!line.trim()) {
      i += 1;
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    if (heading) {
      out.push(h("p", {}, h("strong", {}, inline(heading[2]))));
      i += 1;
      continue;
    }
    if (/^\s*>/.test(line)) {
      const body = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) body.push(lines[i++].replace(/^\s*>\s?/, ""));
      out.push(h("blockquote", {}, renderMarkdown(body.join("\n"))));
      continue;
    }
    const bullet = /^\s*[-*+]\s+/;
    const numbered = /^\s*\d+[.)]\s+/;
    if (bullet.test(line) || numbered.test(line)) {
      const marker = bullet.test(line) ? bullet : numbered;
      const items = [];
      while (i < lines.length && marker.test(lines[i])) items.push(lines[i++].replace(marker, ""));
      out.push(h(marker === bullet ? "ul" : "ol", {}, items.map((item) => h("li", {}, inline(item)))));
      continue;
    }
    const paragraph = [];
    while (
      i < lines.length &&
      lines[i].trim() &&
      !/^\s*(```|~~~|#{1,6}\s|>|[-*+]\s|\d+[.)]\s)/.test(lines[i])
    ) {
      paragraph.push(lines[i++]);
    }
    if (paragraph.length === 0) paragraph.push(lines[i++]);
    out.push(h("p", {}, inline(paragraph.join("\n"))));
  }
  return out;
}

export function inline(source) {
  const nodes = [];
  const pattern = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*)|(\[[^\]]+\]\([^)\s]+\))/g;
  let last = 0;
  for (const match of source.matchAll(pattern)) {
    if (match.index > last) nodes.push(source.slice(last, match.index));
    const token = match[0];
    if (match[1]) nodes.push(h("code", {}, token.slice(1, -1)));
    else if (match[2]) nodes.push(h("strong", {}, token.slice(2, -2)));
    else if (match[3]) nodes.push(h("em", {}, token.slice(1, -1)));
    else {
      const [, label, href] = token.match(/^\[([^\]]+)\]\(([^)\s]+)\)$/);
      nodes.push(
        /^https?:\/\//i.test(href)
          ? h("a", { href, title: href, rel: "noreferrer noopener", target: "_blank" }, label)
          : `${label} (${href})`,
      );
    }
    last = match.index + token.length;
  }
  if (last < source.length) nodes.push(source.slice(last));
  return nodes;
}

export function statusLabel(status) {
  if ((status & STATUS_INPUT_NEEDED) !== 0) return h("span", { class: "badge input" }, "needs input");
  if ((status & STATUS_ERROR) !== 0) return h("span", { class: "badge error" }, "error");
  if ((status & STATUS_IN_PROGRESS) !== 0) return h("span", { class: "badge running" }, "working");
  return h("span", { class: "badge" }, "idle");
}

/** `3,000 tokens in · 300 out · $0.0095`: what a turn used, when the agent said. */
export function usageLine(usage) {
  if (!usage || (typeof usage.inputTokens !== "number" && typeof usage.outputTokens !== "number")) return null;
  const words = [];
  if (typeof usage.inputTokens === "number") words.push(`${usage.inputTokens.toLocaleString("en")} tokens in`);
  if (typeof usage.outputTokens === "number") words.push(`${usage.outputTokens.toLocaleString("en")} out`);
  const cost = formatCost(usage._meta && usage._meta["agenthost.costUsd"]);
  if (cost) words.push(`${cost} (an estimate)`);
  return words.join(" · ");
}

export function toolIcon(tool) {
  if (tool.status === "completed") return tool.success === false ? "✗" : "✓";
  if (tool.status === "cancelled") return "⊘";
  if (String(tool.status || "").startsWith("pending")) return "?";
  return "…";
}
