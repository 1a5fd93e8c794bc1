// The safetensors format (huggingface/safetensors, docs "Format"): an 8-byte
// little-endian header length N, N bytes of JSON (`__metadata__` and, per
// tensor, dtype, shape and data_offsets relative to the end of the header,
// padded with spaces to a multiple of 8), then the tensors' bytes back to back.
// The lab's repositories hold such files with seeded bytes for data: valid
// framing, no meaningful weights.

export type Dtype = "BF16" | "F16" | "F32";

export const DTYPE_BYTES: Readonly<Record<Dtype, number>> = { BF16: 2, F16: 2, F32: 4 };

export interface TensorSpec {
    name: string;
    dtype: Dtype;
    shape: number[];
}

export interface SafetensorsHeaderEntry {
    dtype: Dtype;
    shape: number[];
    data_offsets: [number, number];
}

export function tensorBytes(t: TensorSpec): number {
    return t.shape.reduce((a, b) => a * b, 1) * DTYPE_BYTES[t.dtype];
}

/** The file for `tensors` (laid out in name order), each tensor's bytes from `data(name, length)`. */
export function safetensorsFile(tensors: readonly TensorSpec[], data: (name: string, length: number) => Buffer, metadata = { format: "pt" }): Buffer {
    const sorted = [...tensors].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const header: Record<string, unknown> = { __metadata__: metadata };
    const parts: Buffer[] = [];
    let offset = 0;
    for (const t of sorted) {
        const length = tensorBytes(t);
        const bytes = data(t.name, length);
        if (bytes.length !== length) throw new Error(`safetensors: ${t.name} has ${bytes.length} bytes, its shape needs ${length}`);
        header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + length] };
        parts.push(bytes);
        offset += length;
    }
    let json = JSON.stringify(header);
    json += " ".repeat((8 - (Buffer.byteLength(json) % 8)) % 8);
    const size = Buffer.alloc(8);
    size.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
    return Buffer.concat([size, Buffer.from(json), ...parts]);
}

/** The header of a safetensors file, and where its data starts; throws where the framing is broken. */
export function parseSafetensorsHeader(file: Buffer): { dataStart: number; metadata: Record<string, string>; tensors: Record<string, SafetensorsHeaderEntry> } {
    if (file.length < 8) throw new Error("safetensors: shorter than its 8-byte header length");
    const n = Number(file.readBigUInt64LE(0));
    if (8 + n > file.length) throw new Error(`safetensors: header length ${n} runs past the file (${file.length} bytes)`);
    const { __metadata__: metadata = {}, ...tensors } = JSON.parse(file.subarray(8, 8 + n).toString("utf8")) as Record<string, unknown>;
    const dataStart = 8 + n;
    const entries = tensors as Record<string, SafetensorsHeaderEntry>;
    let end = 0;
    for (const [name, e] of Object.entries(entries).sort(([, a], [, b]) => a.data_offsets[0] - b.data_offsets[0])) {
        const [from, to] = e.data_offsets;
        if (from !== end) throw new Error(`safetensors: ${name} starts at ${from}, not where the previous tensor ends (${end})`);
        if (to - from !== tensorBytes({ name, ...e }))
            throw new Error(`safetensors: ${name} has ${to - from} bytes, its shape needs ${tensorBytes({ name, ...e })}`);
        end = to;
    }
    if (dataStart + end !== file.length) throw new Error(`safetensors: the tensors end at ${dataStart + end}, the file at ${file.length}`);
    return { dataStart, metadata: metadata as Record<string, string>, tensors: entries };
}
