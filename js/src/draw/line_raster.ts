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
    const uLimit = steep ? this.height : this.width;
    const vLimit = steep ? this.width : this.height;
    const hv = half * Math.sqrt(1 + slope * slope); // the line's extent across the minor axis
    const vEnd = v0 + (u1 - u0) * slope;
    const vMin = Math.min(v0, vEnd) - hv;
    const vMax = Math.max(v0, vEnd) + hv;
    // the steps whose pixel centre is on the line (butt ends at the endpoints), inside the region
    const first = Math.max(0, Math.ceil(Math.min(u0, u1) - 0.5));
    const last = Math.min(uLimit - 1, Math.floor(Math.max(u0, u1) - 0.5));
    if (first > last || vMax < 0 || vMin >= vLimit) return;
    const r0 = steep ? first : Math.max(0, Math.floor(vMin)); // the rows touched: the composite walks them
    const r1 = steep ? last : Math.min(vLimit - 1, Math.floor(vMax));
    if (r0 < this.lo) this.lo = r0;
    if (r1 > this.hi) this.hi = r1;
    const vc = v0 + (first + 0.5 - u0) * slope;
    if (vMin >= 0 && vMax < vLimit) {
      // all of it across the region: the fast loops, one per direction (no bounds, no branch on the direction)
      if (steep) this.spans(first, last, vc, slope, hv, alpha, this.width, 1);
      else this.spans(first, last, vc, slope, hv, alpha, 1, this.width);
    } else {
      this.clipped(first, last, vc, slope, hv, alpha, steep, vLimit);
    }
  }

  /** A line inside the region: along its major axis u = first..last, its centre on the minor axis at vc (+ slope
   * per step). `uStride`/`vStride` are the cover's index steps along each axis: a steep line steps rows (u) and
   * spans columns (v), a shallow one the other way round. */
  private spans(
    first: number,
    last: number,
    vc: number,
    slope: number,
    hv: number,
    alpha: number,
    uStride: number,
    vStride: number,
  ): void {
    const cover = this.cover;
    for (let u = first, c = vc; u <= last; u++, c += slope) {
      const lo = c - hv;
      const hi = c + hv;
      const vF = lo | 0; // lo >= 0 here: truncation is floor
      const vL = hi | 0;
      let i = u * uStride + vF * vStride;
      if (vF === vL) {
        const a = alpha * (hi - lo);
        if (a > cover[i]) cover[i] = a;
        continue;
      }
      const aF = alpha * (vF + 1 - lo);
      if (aF > cover[i]) cover[i] = aF;
      for (let v = vF + 1; v < vL; v++) {
        i += vStride;
        if (alpha > cover[i]) cover[i] = alpha;
      }
      const aL = alpha * (hi - vL);
      i += vStride;
      if (aL > cover[i]) cover[i] = aL;
    }
  }

  /** A line that leaves the region across its minor axis: each pixel checked against the region's edges. */
  private clipped(
    first: number,
    last: number,
    vc: number,
    slope: number,
    hv: number,
    alpha: number,
    steep: boolean,
    vLimit: number,
  ): void {
    const cover = this.cover;
    const w = this.width;
    for (let u = first, c = vc; u <= last; u++, c += slope) {
      const lo = c - hv;
      const hi = c + hv;
      const vLast = Math.min(vLimit - 1, Math.floor(hi));
      for (let v = Math.max(0, Math.floor(lo)); v <= vLast; v++) {
        const a = alpha * (Math.min(v + 1, hi) - Math.max(v, lo));
        const i = steep ? u * w + v : v * w + u;
        if (a > cover[i]) cover[i] = a;
      }
    }
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
