// The approvals inbox: every pending consent of the user, across threads, decidable here, each
// with a link to its conversation; below them, the latest decided. A decision from the inbox is
// recorded at once (202) and the run goes on in the background; its card moves from "Waiting for
// your decision" to "Decided". While it is shown it follows the approvals stream: a consent asked
// anywhere appears, one decided elsewhere says who decided and moves too. A raw interrupt is
// answered here like any consent; the tool calls of one review (LangChain's human-in-the-loop
// middleware) are decided together in one request, so a review of several calls is shown with a
// link to its conversation, where they are decided.

import { consentCard } from "./consent-card.js";
import { decidedText, outcomeText } from "./consent-words.js";
import { $, fill, h, when } from "./dom.js";
import { argsTable } from "./tool-call-card.js";

/** The newest approvals looked through for the decided ones shown on load, and how many of
 * those are shown. */
const RECENT = 50;
const DECIDED_SHOWN = 10;

const DECIDED_TEXT = {
  approve: "Approved: the tutor carries it out now.",
  edit: "Approved with your edit: the tutor carries it out now.",
  reject: "Rejected: nothing will change.",
};

/** What a decision sent from the inbox did, in words. */
function decidedLine(kind, decision) {
  if (kind === "interrupt" || kind === "tool_call") return `${decidedText(kind, decision)} The conversation goes on in the background.`;
  return DECIDED_TEXT[decision] ?? decidedText(kind, decision);
}

/** The review a tool call belongs to (its `interrupt_id`; the run that asked, from a server
 * whose approvals do not say), or null for any other kind. */
function reviewOf(approval) {
  if (approval.kind !== "tool_call") return null;
  return approval.interrupt_id || `${approval.thread_id} ${approval.run_id}`;
}

export class Inbox {
  /** @param {import("./consentry.js").ConsentryClient} client */
  constructor(client, app) {
    this.client = client;
    this.app = app;
    this.list = $("#inbox-list");
    this.decidedList = $("#inbox-decided-list");
    this.decidedSection = $("#inbox-decided");
    $("#inbox-refresh").addEventListener("click", () => this.load());
  }

  get shown() {
    return !$("#inbox-view").hidden;
  }

  /** Every pending consent, newest first (all pages). */
  async pending() {
    const approvals = [];
    let cursor = null;
    do {
      const page = await this.client.listApprovals({ status: "pending", cursor, limit: 100 });
      approvals.push(...page.approvals);
      cursor = page.next_cursor;
    } while (cursor);
    return approvals;
  }

  /** The newest approvals that wait no more (decided, expired, cancelled, superseded), newest
   * first. */
  async recentlyDecided() {
    const { approvals } = await this.client.request("GET", `/v1/approvals?limit=${RECENT}`);
    return approvals.filter((approval) => approval.status !== "pending").slice(0, DECIDED_SHOWN);
  }

  async load() {
    const [approvals, decided] = await Promise.all([this.pending(), this.recentlyDecided()]);
    const reviews = new Map();
    for (const approval of approvals.filter(reviewOf)) {
      reviews.set(reviewOf(approval), [...(reviews.get(reviewOf(approval)) ?? []), approval]);
    }
    const items = [];
    for (const approval of approvals) {
      const review = reviews.get(reviewOf(approval));
      if (!review || review.length === 1) items.push(this.card(approval));
      else if (review[0] === approval) items.push(this.reviewNotice(review));
    }
    fill(this.list, items.length ? items : this.empty());
    fill(this.decidedList, decided.map((approval) => {
      const card = this.card(approval);
      card.settle(approval, { elsewhere: false });
      return card;
    }));
    this.decidedSection.hidden = decided.length === 0;
    this.app.inboxCount(approvals.length);
  }

  /** A card (or a review) that waits no more leaves the waiting list, for the top of the
   * decided one; the keyboard's place goes with it. */
  moveToDecided(item) {
    if (item.parentElement !== this.list) return;
    const focused = item.contains(document.activeElement) ? document.activeElement : null;
    this.decidedList.prepend(item);
    this.decidedSection.hidden = false;
    focused?.focus();
    if (!this.list.children.length) fill(this.list, this.empty());
  }

  /** The link to the conversation a consent was asked in (its note, or its project's chat). */
  conversationLink(threadId, text) {
    return h("a.open-conversation", {
      href: "#/notes",
      onclick: (e) => {
        e.preventDefault();
        this.app.openConversation(threadId);
      },
    }, text);
  }

  empty() {
    return h("p.empty", {}, "Nothing waits for your decision.");
  }

  /** A change from the approvals stream. */
  changed({ change, approval }) {
    if (!this.shown) return; // loaded afresh when shown
    const selector = `[data-approval-id="${CSS.escape(approval.approval_id)}"]`;
    const shown = this.list.querySelector(selector) ?? this.decidedList.querySelector(selector);
    if (change !== "requested") {
      shown?.settle(approval);
      return;
    }
    if (shown || approval.status !== "pending") return;
    this.list.querySelector(".empty")?.remove();
    const review = reviewOf(approval);
    const same = review ? [...this.list.querySelectorAll('[data-kind="tool_call"]')].filter((e) => e.dataset.review === review) : [];
    const notice = same.find((e) => e.classList.contains("review-notice"));
    if (notice) notice.addCall(approval);
    else if (same.length) same[0].replaceWith(this.reviewNotice([same[0].approval, approval]));
    else this.list.prepend(this.card(approval));
  }

  card(approval) {
    const card = consentCard(approval, {
      send: async (decision, extra) => {
        await this.client.decideApproval(approval.approval_id, decision, extra);
        this.app.inboxChanged();
        return decidedLine(approval.kind, decision);
      },
      settled: (settledCard) => this.moveToDecided(settledCard),
    });
    card.approval = approval;
    if (reviewOf(approval)) card.dataset.review = reviewOf(approval);
    card.prepend(h("p.muted.asked", {}, `Asked ${when(approval.created_at)} · `,
      this.conversationLink(approval.thread_id, "Open its conversation")));
    return card;
  }

  /** The tool calls of one review, which are decided together: shown, with a link to the
   * conversation where they are decided. */
  reviewNotice(approvals) {
    const calls = h("ol.review-calls");
    const heading = h("h3.consent-title");
    const notice = h("article.review-notice",
      { dataset: { kind: "tool_call", review: reviewOf(approvals[0]), state: "pending" }, tabindex: "-1" },
      h("p.muted", {}, `Asked ${when(approvals[0].created_at)}`),
      heading,
      calls,
      h("p.review-where", {},
        "They are decided together: ",
        this.conversationLink(approvals[0].thread_id, "decide them in their conversation"),
        "."));
    const settled = () => {
      const open = [...calls.children].filter((c) => c.dataset.state === "pending").length;
      notice.dataset.state = open ? "pending" : "decided";
      if (!open) this.moveToDecided(notice);
    };
    notice.addCall = (approval) => {
      const status = h("p.consent-status", { role: "status" });
      const proposal = approval.proposal ?? {};
      const call = h("li.review-call", { dataset: { approvalId: approval.approval_id, state: "pending" } },
        h("p.tool-call-name", {}, "Tool ", h("code", {}, proposal.name ?? "?")),
        argsTable(proposal.args),
        status);
      call.settle = (changed) => {
        if (changed.status === "pending") return;
        call.dataset.state = "decided";
        status.textContent = outcomeText(changed.status, changed.decided, { elsewhere: true });
        settled();
      };
      call.dataset.order = String(approval.proposal?.index ?? 0);
      // in the order the model asked for them (the inbox lists the newest first)
      const after = [...calls.children].find((c) => Number(c.dataset.order) > Number(call.dataset.order));
      calls.insertBefore(call, after ?? null);
      heading.textContent = `${calls.children.length} tool calls to review together`;
      settled();
    };
    for (const approval of approvals) notice.addCall(approval);
    return notice;
  }
}
