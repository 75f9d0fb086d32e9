// Decoding the binary arrays Python sends: {buffer, dtype, shape} (see attnwidgets/widgets/_base.py: pack()).
// ipywidgets hands nested bytes over as DataView; custom messages may give ArrayBuffer or typed arrays.

export type DType = "float32" | "float16" | "uint8";

export interface Packed {
  buffer: DataView | ArrayBuffer | ArrayBufferView;
  dtype: DType;
  shape: number[];
  /** For uint8: the value byte `top` stands for (default 1). */
  scale?: number;
  /** For uint8: the byte that stands for `scale` (default 255; 254 when byte 255 is `masked`). */
  top?: number;
  /** For uint8: the byte that stands for NaN, a masked cell (absent: no cell is masked). */
  masked?: number;
}

/** The array of a reply whose content carries its spec ({dtype, shape, scale?, top?, masked?}) and whose first
 *  buffer holds the data. Passing the whole spec keeps uint8 replies (saved pages) on their scale and mask. */
export function replyPacked(content: Record<string, unknown>, buffer: Packed["buffer"]): Packed {
  const spec = content as { dtype: DType; shape: number[]; scale?: number; top?: number; masked?: number };
  return {
    buffer,
    dtype: spec.dtype,
    shape: spec.shape,
    scale: spec.scale,
    top: spec.top,
    masked: spec.masked,
  };
}

export interface Matrix {
  data: Float32Array;
  shape: number[];
}

export function toBytes(buf: DataView | ArrayBuffer | ArrayBufferView): Uint8Array {
  if (buf instanceof ArrayBuffer) return new Uint8Array(buf);
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
}

/** IEEE 754 half precision (as its 16 bits) to a JS number. */
export function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * 2 ** -14 * (frac / 1024);
  if (exp === 31) return frac ? Number.NaN : sign * Number.POSITIVE_INFINITY;
  return sign * 2 ** (exp - 15) * (1 + frac / 1024);
}

export function decode(p: Packed): Matrix {
  const bytes = toBytes(p.buffer);
  const size = p.shape.reduce((a, b) => a * b, 1);
  const out = new Float32Array(size);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (p.dtype === "float32") {
    if (bytes.byteLength < size * 4)
      throw new Error(`float32 buffer too short: ${bytes.byteLength} < ${size * 4}`);
    for (let i = 0; i < size; i++) out[i] = view.getFloat32(i * 4, true);
  } else if (p.dtype === "float16") {
    if (bytes.byteLength < size * 2)
      throw new Error(`float16 buffer too short: ${bytes.byteLength} < ${size * 2}`);
    for (let i = 0; i < size; i++) out[i] = halfToFloat(view.getUint16(i * 2, true));
  } else if (p.dtype === "uint8") {
    if (bytes.byteLength < size) throw new Error(`uint8 buffer too short: ${bytes.byteLength} < ${size}`);
    const step = (p.scale ?? 1) / (p.top ?? 255);
    const masked = p.masked ?? -1;
    for (let i = 0; i < size; i++) out[i] = bytes[i] === masked ? Number.NaN : bytes[i] * step;
  } else {
    throw new Error(`unknown dtype ${String(p.dtype)}`);
  }
  return { data: out, shape: p.shape.slice() };
}

export function maxOf(data: Float32Array): number {
  let m = 0;
  for (let i = 0; i < data.length; i++) if (data[i] > m) m = data[i];
  return m;
}

/** The top of a map's colour scale: `vmax` as sent when it is a positive number, else the data's largest value
 * (1 for an all-zero map). */
export function scaleTop(vmax: number | undefined, data: Float32Array): number {
  return vmax !== undefined && Number.isFinite(vmax) && vmax > 0 ? vmax : maxOf(data) || 1;
}
