/**
 * One remote command for several reads: every section's output follows a line
 * `<marker> <name>`, and the marker is random per command, so no file's
 * contents (a unit file, a pct config, a journal line) can forge or end a
 * section. The one framing every batched reader uses (unit reads, the GPU
 * host's facts, the container's config and status, the GPU-memory wait, the
 * readiness poll).
 */
import { randomBytes } from "node:crypto";

export interface BatchSection {
    /** Names the section in the output (may contain spaces: the rest of the marker line). */
    name: string;
    /** Shell run for the section; its stdout is the section's text. */
    script: string;
}

/** A fresh marker: `sglang-serve-<16 hex>` (the read-only gate accepts exactly this shape). */
export function newMarker(): string {
    return `sglang-serve-${randomBytes(8).toString("hex")}`;
}

export function renderBatch(sections: readonly BatchSection[], marker: string): string {
    return sections.flatMap((s) => [`echo '${marker} ${s.name}'`, s.script]).join("\n");
}

/**
 * The sections' texts by name, as the script printed them (each without the
 * newline before the next marker line). A section whose marker line never
 * came (the script stopped before it) is absent. Text before the first
 * marker line is kept under "" (nothing normally).
 */
export function parseBatch(output: string, marker: string): Map<string, string> {
    const sections = new Map<string, string>();
    let current = "";
    let body: string[] = [];
    const close = () => {
        if (current !== "" || body.some((l) => l !== "")) sections.set(current, body.join("\n"));
    };
    for (const line of output.split("\n")) {
        if (line.startsWith(`${marker} `)) {
            close();
            current = line.slice(marker.length + 1);
            body = [];
        } else body.push(line);
    }
    close();
    return sections;
}
