// Seal status, the unseal form (key shares and progress), sealing, and first-time init.

import { api, session } from "../api.js";
import { act, confirmDialog, field, h, input, okBox, outcome, pageTitle, secretValue, table } from "../dom.js";

function statusTable(status) {
  const rows = [
    ["Initialised", status.initialized ? "yes" : "no"],
    ["Sealed", status.sealed ? "yes" : "no"],
    ["Seal type", status.type],
    ["Key shares", String(status.n)],
    ["Threshold", String(status.t)],
    ["Unseal progress", `${status.progress} of ${status.t}`],
    ["Version", status.version],
    ["Storage", status.storage_type || ""],
    ["Cluster name", status.cluster_name || ""],
    ["Cluster id", status.cluster_id || ""],
  ];
  return table("Seal status", ["Property", "Value"], rows);
}

function progressBar(status) {
  return h(
    "div",
    { class: "progress" },
    h("label", { for: "unseal-progress" }, `Key shares entered: ${status.progress} of ${status.t}`),
    h("progress", { id: "unseal-progress", max: String(status.t || 1), value: String(status.progress || 0) }),
  );
}

export async function sealPage(status, rerender) {
  const out = outcome();
  const children = [pageTitle(status.sealed ? "Coffer is sealed" : "Seal status")];
  const statusHolder = h("div", {}, statusTable(status));
  if (status.sealed) {
    const key = input({ id: "unseal-key", type: "password", autocomplete: "off" });
    const submit = h("button", { type: "submit" }, "Submit key share");
    const reset = h("button", { type: "button", class: "secondary" }, "Reset progress");
    const progress = h("div", {}, progressBar(status));
    const form = h(
      "form",
      {
        class: "card narrow",
        onsubmit: async (e) => {
          e.preventDefault();
          await act(out, async () => {
            if (!key.value.trim()) throw new Error("enter an unseal key share");
            const next = await api("PUT", "sys/unseal", { body: { key: key.value.trim() }, token: "", namespace: "" });
            key.value = "";
            if (!next.sealed) {
              out.show(okBox("Unsealed."));
              rerender();
              return;
            }
            progress.replaceChildren(progressBar(next));
            statusHolder.replaceChildren(statusTable(next));
            out.ok(`Key share accepted: ${next.progress} of ${next.t}.`);
            key.focus();
          }, submit);
        },
      },
      h("h2", {}, "Unseal"),
      h("p", {}, `Enter ${status.t} of the ${status.n} unseal key shares, one at a time.`),
      progress,
      field("Unseal key share", key),
      h("div", { class: "actions" }, submit, reset),
      out.el,
    );
    reset.addEventListener("click", () =>
      act(out, async () => {
        const next = await api("PUT", "sys/unseal", { body: { reset: true }, token: "", namespace: "" });
        progress.replaceChildren(progressBar(next));
        statusHolder.replaceChildren(statusTable(next));
        out.ok("Progress reset.");
      }, reset),
    );
    children.push(form);
  } else if (session.token) {
    const seal = h("button", { type: "button", class: "danger" }, "Seal this server");
    seal.addEventListener("click", async () => {
      if (!(await confirmDialog("Seal Coffer? Every request will fail until it is unsealed with the key shares.", "Seal"))) return;
      await act(out, async () => {
        await api("PUT", "sys/seal", { namespace: "" });
        rerender();
      }, seal);
    });
    children.push(h("div", { class: "card" }, h("h2", {}, "Seal"), h("p", {}, "Sealing discards the key in memory."), seal, out.el));
  }
  children.push(h("section", { class: "card" }, h("h2", {}, "Status"), statusHolder));
  return h("div", {}, children);
}

export async function initPage(rerender) {
  const out = outcome();
  const shares = input({ id: "init-shares", type: "number", min: "1", value: "5" });
  const threshold = input({ id: "init-threshold", type: "number", min: "1", value: "3" });
  const submit = h("button", { type: "submit" }, "Initialise");
  const form = h(
    "form",
    {
      class: "card narrow",
      onsubmit: async (e) => {
        e.preventDefault();
        await act(out, async () => {
          const reply = await api("PUT", "sys/init", {
            body: { secret_shares: Number(shares.value), secret_threshold: Number(threshold.value) },
            token: "",
            namespace: "",
          });
          const keys = reply.keys_base64 || reply.keys || [];
          form.replaceChildren(
            h("h2", {}, "Initialised"),
            h("p", {}, "Store these now: they are shown once."),
            table("Unseal key shares", ["#", "Key share"], keys.map((k, i) => [String(i + 1), secretValue(k, `key share ${i + 1}`)])),
            h("p", {}, "Root token: ", secretValue(reply.root_token, "root token")),
            h("button", { type: "button", onclick: rerender }, "Continue to unseal"),
          );
        }, submit);
      },
    },
    h("h2", {}, "Initialise"),
    h("p", {}, "This server has no data yet. Choose how many key shares to create and how many unseal it."),
    field("Key shares", shares),
    field("Key threshold", threshold),
    submit,
    out.el,
  );
  return h("div", {}, pageTitle("Coffer is not initialised"), form);
}
