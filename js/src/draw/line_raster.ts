// Straight anti-aliased lines drawn into RGBA pixels by hand, for HeadView's thousands of lines.
//
// Why not the canvas: Chromium's 2D canvas (software, as in a headless or GPU-less browser) rasterised HeadView's
// lines, batched into one Path2D per (head, opacity step), in about 0.8 s at 128 tokens (10,000 lines 2 px wide):
// a stroked path of hundreds of crossing segments is outlined and scan-converted as one shape, with many edges on
// every scanline. One stroke per line was still 0.3-0.5 s. Here each line costs a few pixels per column.
//
// Each head is drawn into a coverage buffer keeping, per pixel, the strongest opacity of the head's lines through it
// (a pixel where ten faint lines cross is as faint as one of them, like the batched paths' union), then blended over
// the pixels in the head's colour; heads blend over each other in the order drawn.

/** A `width` x `height` device-pixel region's coverage for one head at a time. */
export class LineRaster {
  private readonly cover: Float32Array;
  private lo: number; // first and last row touched since the last composite
  private hi: number;

  constructor(
    readonly width: number,
    readonly height: number,
  ) {
    this.cover = new Float32Array(Math.max(0, width * height));
    this.lo = height;
    this.hi = -1;
  }

  /** A line from (ax, ay) to (bx, by) in the region's pixels, `half` px either side of its centre, opacity `alpha`.
   * Steps along its longer axis: per column (or row) the covered span's overlap with each pixel is its coverage. */
  line(ax: number, ay: number, bx: number, by: number, half: number, alpha: number): void {
    const dx = bx - ax;
    const dy = by - ay;
    if (Math.abs(dx) >= Math.abs(dy)) {
      if (dx === 0) return; // a point
      this.sweep(ax, ay, bx, dy / dx, half, alpha, false);
    } else {
      this.sweep(ay, ax, by, dx / dy, half, alpha, true);
    }
  }

  /** Along the major axis from u0 to u1 (v = v0 + (u - u0) * slope); `steep`: u is the row, v the column. Per
   * step the span [vc - hv, vc + hv] covers its first and last pixel in part and those between in full. */
  private sweep(
    u0: number,
    v0: number,
    u1: number,
    slope: number,
    half: number,
    alpha: number,
    steep: boolean,
  ) {
    const uMin = Math.min(u0, u1);
    const uMax = Math.max(u0, u1);
    const uLimit = steep ? this.height : this.width;
    const vLimit = steep ? this.width : this.height;
    const hv = half * Math.sqrt(1 + slope * slope); // the line's extent across the minor axis
    const w = this.width;
    const cover = this.cover;
    const stride = steep ? 1 : w; // index step along v
    const first = Math.max(0, Math.floor(uMin));
    const last = Math.min(uLimit - 1, Math.ceil(uMax) - 1);
    for (let u = first; u <= last; u++) {
      const c = u + 0.5;
      if (c < uMin || c > uMax) continue; // butt ends at the endpoints
      const vc = v0 + (c - u0) * slope;
      const lo = vc - hv;
      const hi = vc + hv;
      let vF = Math.floor(lo);
      let vL = Math.floor(hi);
      let aF = vF === vL ? alpha * (hi - lo) : alpha * (vF + 1 - lo); // the first pixel's share
      let aL = alpha * (hi - vL); // the last's
      if (vF < 0) {
        vF = 0;
        aF = alpha;
      }
      if (vL >= vLimit) {
        vL = vLimit - 1;
        aL = alpha;
      }
      if (vF > vL) continue;
      const base = steep ? u * w : u;
      let i = base + vF * stride;
      if (aF > cover[i]) cover[i] = aF;
      if (vL === vF) continue;
      for (let v = vF + 1; v < vL; v++) {
        i += stride;
        if (alpha > cover[i]) cover[i] = alpha;
      }
      i = base + vL * stride;
      if (aL > cover[i]) cover[i] = aL;
    }
    // the rows touched (a bound: the composite walks them)
    const vMin = Math.max(0, Math.floor(Math.min(v0, v0 + (u1 - u0) * slope) - hv));
    const vMax = Math.min(vLimit - 1, Math.floor(Math.max(v0, v0 + (u1 - u0) * slope) + hv));
    const r0 = steep ? first : vMin;
    const r1 = steep ? last : vMax;
    if (r0 < this.lo) this.lo = r0;
    if (r1 > this.hi) this.hi = r1;
  }

  /** Blend the coverage so far over `px` (opaque RGBA pixels, this region's size: their alpha stays 255) in colour
   * `rgb`, and clear it. */
  composite(px: Uint8ClampedArray, rgb: [number, number, number]): void {
    const [r, g, b] = rgb;
    const cover = this.cover;
    const end = (this.hi + 1) * this.width;
    for (let i = Math.max(0, this.lo) * this.width; i < end; i++) {
      const a = cover[i];
      if (a <= 0) continue;
      const o = i * 4;
      px[o] += (r - px[o]) * a;
      px[o + 1] += (g - px[o + 1]) * a;
      px[o + 2] += (b - px[o + 2]) * a;
      cover[i] = 0;
    }
    this.lo = this.height;
    this.hi = -1;
  }
}
