// pveversion on the lab's Proxmox host.
import { currentLab } from "../lab-info";

const info = currentLab();
const verbose = process.argv.includes("-v") || process.argv.includes("--verbose");
process.stdout.write(`pve-manager/${info.proxmoxVersion}/3e76eec21c4a14a7 (running kernel: 6.8.12-5-pve)\n`);
if (verbose)
    process.stdout.write(
        `proxmox-ve: ${info.proxmoxVersion.split(".").slice(0, 2).join(".")}.0 (running kernel: 6.8.12-5-pve)\npve-container: 5.2.3\nlxc-pve: 6.0.0-1\n`,
    );
