// An example of a new post-ready check, as one file: the tests register it
// beside the registered ones (remote/checks/registry.ts) to show that a check
// needs nothing else. It asks GET /v1/models, with the key, whether the server
// lists the model under its served name (what clients ask for).

import { endpointUrl } from "../../remote/probe";
import { checkFailed, PostReadyCheck } from "../../remote/checks/post-ready-check";

const NAME = "served-model-listed";

export const servedModelListedCheck: PostReadyCheck = {
    name: NAME,
    appliesTo: (server) => server.servedModelName !== "",
    async run(ctx) {
        const res = await ctx.http.get(endpointUrl(ctx.endpoint, "/v1/models"), ctx.withKey);
        // No answer may be the moment: a new start could pass.
        if ("error" in res) return checkFailed(NAME, `GET /v1/models: ${res.error}`, { retry: true });
        const body = res.body as { data?: Array<{ id?: unknown }> } | undefined;
        const ids = (body?.data ?? []).map((m) => String(m.id));
        if (res.status !== 200 || !ids.includes(ctx.servedModelName)) {
            return checkFailed(NAME, `GET /v1/models (HTTP ${res.status}) lists ${JSON.stringify(ids)}, not ${ctx.servedModelName}`, { retry: false });
        }
        return { ok: true, said: `GET /v1/models lists ${ctx.servedModelName}` };
    },
};
