// The approvals inbox: every pending consent of the user, across threads, decidable here.
// A decision from the inbox is recorded at once (202) and the run goes on in the background.

import { consentCard } from "./consent-card.js";
import { $, fill, h, when } from "./dom.js";

export class Inbox {
  /** @param {import("./consentry.js").ConsentryClient} client */
  constructor(client, app) {
    this.client = client;
    this.app = app;
    this.list = $("#inbox-list");
    $("#inbox-refresh").addEventListener("click", () => this.load());
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
    fill(this.list, approvals.length ? approvals.map((a) => this.card(a))
      : h("p.empty", {}, "Nothing waits for your decision."));
    this.app.inboxCount(approvals.length);
  }

  card(approval) {
    const card = consentCard(approval, {
      send: async (decision, extra) => {
        const accepted = await this.client.decideApproval(approval.approval_id, decision, extra);
        this.app.inboxChanged();
        return `${accepted.status[0].toUpperCase()}${accepted.status.slice(1)}: the tutor carries it out now.`;
      },
    });
    card.prepend(h("p.muted", {}, `Asked ${when(approval.created_at)}`));
    return card;
  }
}
