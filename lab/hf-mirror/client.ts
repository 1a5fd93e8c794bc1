// How the lab runs the real huggingface_hub against its mirror: hf_client.py
// in install.sh's client venv, with an environment built from an allowlist
// (HF_ENDPOINT the mirror, its own HF_HOME so no token or config of this
// machine is read, no proxy variables, telemetry off).
import * as path from "path";

/** hf_client.py's commands (see its docstring). */
export type HfClientVerb = "download" | "file" | "info" | "verify";

export interface HfClientCommand {
    argv: string[];
    env: Record<string, string>;
}

export function hfClientCommand(
    clientVenv: string,
    o: { endpoint: string; hfHome: string; env?: Record<string, string> },
    command: HfClientVerb,
    ...args: string[]
): HfClientCommand {
    return {
        argv: [path.join(clientVenv, "bin", "python"), path.join(__dirname, "hf_client.py"), command, ...args],
        env: {
            PATH: "/usr/local/bin:/usr/bin:/bin",
            LANG: "C.UTF-8",
            HOME: o.hfHome,
            HF_HOME: o.hfHome,
            HF_ENDPOINT: o.endpoint,
            HF_HUB_DISABLE_TELEMETRY: "1",
            HF_HUB_DISABLE_PROGRESS_BARS: "1",
            PYTHONDONTWRITEBYTECODE: "1",
            ...o.env,
        },
    };
}
