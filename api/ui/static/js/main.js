// Entry point: the sign-in gate, the header, and a #/ router for the pages.

import { api, session } from "./api.js";
import { errorBox, h, mount } from "./dom.js";
import { clusterPage } from "./pages/cluster.js";
import { identityPage } from "./pages/identity.js";
import { loginPage } from "./pages/login.js";
import { mountsPage } from "./pages/mounts.js";
import { namespacesPage } from "./pages/namespaces.js";
import { policiesPage } from "./pages/policies.js";
import { initPage, sealPage } from "./pages/seal.js";
import { secretsPage } from "./pages/secrets.js";
import { tokensPage } from "./pages/tokens.js";

const NAV = [
  ["secrets", "Secrets"],
  ["policies", "Policies"],
  ["access", "Auth & engines"],
  ["tokens", "Tokens"],
  ["identity", "Identity"],
  ["namespaces", "Namespaces"],
  ["cluster", "Cluster"],
  ["status", "Seal status"],
];

const PAGES = {
  secrets: secretsPage,
  policies: policiesPage,
  access: mountsPage,
  tokens: tokensPage,
  identity: identityPage,
  namespaces: namespacesPage,
  cluster: clusterPage,
  status: sealPage,
};

/** The route: "#/secrets/kv/a%2Fb" -> ["secrets", "kv", "a/b"] (segments decoded). */
export function route() {
  const hash = location.hash.startsWith("#/") ? location.hash.slice(2) : "";
  const parts = hash.split("/").map((p) => {
    try {
      return decodeURIComponent(p);
    } catch {
      return p;
    }
  });
  return parts[0] ? parts : ["secrets"];
}

export function go(...parts) {
  const hash = `#/${parts.map(encodeURIComponent).join("/")}`;
  if (location.hash === hash) render();
  else location.hash = hash;
}

/** Sign out: revoke nothing (the token may be shared), forget it in this tab. */
export function signOut() {
  session.clear();
  go("login");
}

function header() {
  const top = document.getElementById("top");
  if (!session.token) {
    mount(top, h("div", { class: "bar" }, h("span", { class: "brand" }, "Coffer")));
    return;
  }
  const current = route()[0];
  const ns = h("input", {
    type: "text",
    id: "ns-input",
    value: session.namespace,
    placeholder: "root",
    autocomplete: "off",
    spellcheck: "false",
    size: "12",
  });
  const nsForm = h(
    "form",
    {
      class: "ns-form",
      onsubmit: (e) => {
        e.preventDefault();
        session.save({ namespace: ns.value.trim().replace(/^\/+|\/+$/g, "") });
        render();
      },
    },
    h("label", { for: "ns-input" }, "Namespace"),
    ns,
    h("button", { type: "submit", class: "small secondary" }, "Switch"),
  );
  mount(
    top,
    h(
      "div",
      { class: "bar" },
      h("a", { class: "brand", href: "#/secrets" }, "Coffer"),
      nsForm,
      h(
        "span",
        { class: "who" },
        h("span", { class: "user", title: "Signed in as" }, session.display || "token"),
        h("button", { type: "button", class: "small secondary", onclick: signOut }, "Sign out"),
      ),
    ),
    h(
      "nav",
      { "aria-label": "Main" },
      h(
        "ul",
        {},
        NAV.map(([id, label]) =>
          h(
            "li",
            {},
            h("a", { href: `#/${id}`, "aria-current": id === current ? "page" : false }, label),
          ),
        ),
      ),
    ),
  );
}

let renderSeq = 0;

async function tokenStillValid() {
  try {
    await api("GET", "auth/token/lookup-self");
    return true;
  } catch (err) {
    return err.status !== 403;
  }
}

/** Draw the page for the current state: uninitialised, sealed, signed out, or a route. */
export async function render() {
  const seq = ++renderSeq;
  const main = document.getElementById("main");
  let status;
  try {
    status = await api("GET", "sys/seal-status", { token: "", namespace: "" });
  } catch (err) {
    header();
    mount(main, h("h1", {}, "Coffer"), errorBox(err, "Cannot read the seal status"),
      h("button", { type: "button", onclick: render }, "Try again"));
    return;
  }
  if (seq !== renderSeq) return;
  const parts = route();
  if (!status.initialized) {
    session.clear();
    header();
    return show(main, await initPage(render));
  }
  if (status.sealed) {
    header();
    return show(main, await sealPage(status, render));
  }
  if (!session.token || parts[0] === "login") {
    if (session.token) session.clear();
    header();
    return show(main, await loginPage(() => go("secrets")));
  }
  header();
  const page = PAGES[parts[0]];
  if (!page) {
    return show(main, h("h1", {}, "Not found"), h("p", {}, "There is no page at this address. "),
      h("a", { href: "#/secrets" }, "Go to secrets"));
  }
  try {
    const content = await page(parts.slice(1), { status, render, go });
    if (seq === renderSeq) show(main, content);
  } catch (err) {
    if (seq !== renderSeq) return;
    if (err.status === 403 && !(await tokenStillValid())) {
      session.clear();
      header();
      show(main, h("h1", {}, "Your session has ended"),
        errorBox(err, "The token is no longer valid (revoked or expired)"),
        h("a", { class: "button", href: "#/login" }, "Sign in again"));
      return;
    }
    show(main, h("h1", {}, "Something went wrong"), errorBox(err));
  }
}

function show(main, ...content) {
  mount(main, ...content);
  const heading = main.querySelector("h1");
  if (heading) document.title = `${heading.textContent} · Coffer`;
}

window.addEventListener("hashchange", () => {
  render().then(() => document.getElementById("main").focus({ preventScroll: true }));
});
document.getElementById("skip").addEventListener("click", () => document.getElementById("main").focus());
render();
