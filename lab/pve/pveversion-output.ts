// What the lab's pveversion prints: lab/bin/pveversion.ts, and its shim's
// shell lines (pveversion-shell.ts).

/** pveversion's output (`-v`/`--verbose`: with the package lines) for a Proxmox VE release (`8.3.2`). */
export function pveversionOutput(proxmoxVersion: string, verbose: boolean): string {
    const head = `pve-manager/${proxmoxVersion}/3e76eec21c4a14a7 (running kernel: 6.8.12-5-pve)\n`;
    if (!verbose) return head;
    return `${head}proxmox-ve: ${proxmoxVersion.split(".").slice(0, 2).join(".")}.0 (running kernel: 6.8.12-5-pve)\npve-container: 5.2.3\nlxc-pve: 6.0.0-1\n`;
}
