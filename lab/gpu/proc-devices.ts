// /proc/devices as a host with the NVIDIA driver loaded shows it: the real
// list with the driver's character majors added (bind-mounted over
// /proc/devices inside the lab machines, like LXCFS does for /proc files).
export function procDevicesWithNvidia(real: string, majors: { nvidia: number; nvidiaUvm: number }): string {
    const add: Array<[number, string]> = [
        [majors.nvidia, "nvidia"],
        [majors.nvidia, "nvidiactl"],
        [majors.nvidiaUvm, "nvidia-uvm"],
        [majors.nvidiaUvm + 1, "nvidia-caps"],
    ];
    const lines = real.split("\n");
    const start = lines.indexOf("Character devices:");
    const end = lines.indexOf("", start);
    const chars = lines.slice(start + 1, end === -1 ? undefined : end).filter((l) => !/\bnvidia/.test(l));
    const entries: Array<[number, string]> = chars.map((l) => {
        const m = /^\s*(\d+)\s+(.*)$/.exec(l);
        return [Number(m?.[1] ?? 0), m?.[2] ?? l.trim()];
    });
    entries.push(...add);
    entries.sort((a, b) => a[0] - b[0]);
    const rendered = entries.map(([n, name]) => `${String(n).padStart(3)} ${name}`);
    return [...lines.slice(0, start + 1), ...rendered, ...(end === -1 ? [] : lines.slice(end))].join("\n");
}
