// The approvals inbox: every pending consent of the user, across threads, decidable here.
// A decision from the inbox is recorded at once (202) and the run goes on in the background.
// While it is shown it follows the approvals stream: a consent asked anywhere appears, one
// decided elsewhere says who decided and locks.

import { consentCard } from "./consent-card.js";
import { $, fill, h, when } from "./dom.js";

const DECIDED_TEXT = {
  approve: "Approved: the tutor carries it out now.",
  edit: "Approved with your edit: the tutor carries it out now.",
  reject: "Rejected: nothing will change.",
};

export class Inbox {
  /** @param {import("./consentry.js").ConsentryClient} client */
  constructor(client, app) {
    this.client = client;
    this.app = app;
    this.list = $("#inbox-list");
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

  async load() {
    const approvals = await this.pending();
    fill(this.list, approvals.length ? approvals.map((a) => this.card(a)) : this.empty());
    this.app.inboxCount(approvals.length);
  }

  empty() {
    return h("p.empty", {}, "Nothing waits for your decision.");
  }

  /** A change from the approvals stream. */
  changed({ change, approval }) {
    if (!this.shown) return; // loaded afresh when shown
    const card = this.list.querySelector(`.consent-card[data-approval-id="${CSS.escape(approval.approval_id)}"]`);
    if (change === "requested") {
      if (card || approval.status !== "pending") return;
      this.list.querySelector(".empty")?.remove();
      this.list.prepend(this.card(approval));
    } else {
      card?.settle(approval);
    }
  }

  card(approval) {
    const card = consentCard(approval, {
      send: async (decision, extra) => {
        await this.client.decideApproval(approval.approval_id, decision, extra);
        this.app.inboxChanged();
        return DECIDED_TEXT[decision];
      },
    });
    card.prepend(h("p.muted", {}, `Asked ${when(approval.created_at)}`));
    return card;
  }
}
