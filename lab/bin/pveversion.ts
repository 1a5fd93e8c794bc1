// pveversion on the lab's Proxmox host (its shim prints the plain and verbose
// forms itself: lab/pve/pveversion-output.ts).
import { currentLab } from "../lab-info";
import { pveversionOutput } from "../pve/pveversion-output";

const info = currentLab();
const verbose = process.argv.includes("-v") || process.argv.includes("--verbose");
process.stdout.write(pveversionOutput(info.proxmoxVersion, verbose));
