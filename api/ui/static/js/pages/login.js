// Sign in with a token, userpass or the idp method (password + TOTP passcode).

import { api, encodePath, session } from "../api.js";
import { act, field, h, input, outcome, pageTitle } from "../dom.js";

const METHODS = [
  ["token", "Token"],
  ["userpass", "Username & password"],
  ["idp", "Identity provider (IdP)"],
];

export async function loginPage(onDone) {
  const out = outcome();
  const method = h(
    "select",
    { id: "login-method" },
    METHODS.map(([value, label]) => h("option", { value }, label)),
  );
  const namespace = input({ id: "login-namespace", value: session.namespace, placeholder: "root" });
  const token = input({ id: "login-token", type: "password", autocomplete: "current-password" });
  const username = input({ id: "login-username", autocomplete: "username" });
  const password = input({ id: "login-password", type: "password", autocomplete: "current-password" });
  const totp = input({ id: "login-totp", inputmode: "numeric", autocomplete: "one-time-code", pattern: "[0-9]*" });
  const mountPath = input({ id: "login-mount", value: "userpass" });

  const tokenFields = h("div", {}, field("Token", token));
  const userFields = h(
    "div",
    {},
    field("Username", username),
    field("Password", password),
    h("div", { class: "totp" }, field("TOTP passcode", totp, "The 6-digit code from your authenticator, if your account uses one.")),
    field("Mount path", mountPath, "Where the auth method is enabled."),
  );
  const sync = () => {
    const m = method.value;
    tokenFields.hidden = m !== "token";
    userFields.hidden = m === "token";
    userFields.querySelector(".totp").hidden = m !== "idp";
    if (m !== "token" && (mountPath.value === "userpass" || mountPath.value === "idp" || !mountPath.value)) {
      mountPath.value = m;
    }
  };
  method.addEventListener("change", sync);
  sync();

  const submit = h("button", { type: "submit" }, "Sign in");
  const form = h(
    "form",
    {
      class: "card narrow",
      "aria-labelledby": "login-title",
      onsubmit: async (e) => {
        e.preventDefault();
        await act(out, async () => {
          const ns = namespace.value.trim().replace(/^\/+|\/+$/g, "");
          let clientToken = token.value.trim();
          if (method.value !== "token") {
            if (!username.value) throw new Error("enter a username");
            const body = { password: password.value };
            if (method.value === "idp" && totp.value.trim()) body.totp = totp.value.trim();
            const mount = encodePath(mountPath.value.trim().replace(/^\/+|\/+$/g, "") || method.value);
            const reply = await api("POST", `auth/${mount}/login/${encodeURIComponent(username.value)}`, {
              body,
              token: "",
              namespace: ns,
            });
            clientToken = reply && reply.auth && reply.auth.client_token;
            if (!clientToken) throw new Error("the server signed you in but returned no token");
          } else if (!clientToken) {
            throw new Error("enter a token");
          }
          const self = await api("GET", "auth/token/lookup-self", { token: clientToken, namespace: ns });
          const data = (self && self.data) || {};
          session.save({ token: clientToken, namespace: ns, display: data.display_name || "token" });
          onDone();
        }, submit);
      },
    },
    h("h1", { id: "login-title" }, "Sign in to Coffer"),
    field("Method", method),
    tokenFields,
    userFields,
    field("Namespace", namespace, "Leave empty for the root namespace."),
    submit,
    out.el,
  );
  pageTitle("Sign in");
  return form;
}
