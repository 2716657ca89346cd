package main

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// chart is a line chart, one line per series, written as SVG by hand.
type chart struct {
	title, xLabel, yLabel string
	xLog, yLog            bool
	xTicks                []float64 // where to mark the x axis; the points' x values when empty
	series                []series
}

type series struct {
	name   string
	points []point
}

type point struct{ x, y float64 }

// The plot's geometry, in SVG units.
const (
	svgWidth, svgHeight          = 720, 420
	padLeft, padRight            = 80, 220
	padTop, padBottom            = 40, 60
	plotWidth, plotHeight        = svgWidth - padLeft - padRight, svgHeight - padTop - padBottom
	legendX                      = svgWidth - padRight + 20
	axisColour, gridColour, font = "#333", "#ddd", "font-family:sans-serif;font-size:12px"
)

// palette tells the lines apart; a dash pattern too, for readers who cannot tell colours.
var palette = []struct{ colour, dash string }{
	{"#1f77b4", ""}, {"#d62728", "6,3"}, {"#2ca02c", "2,3"}, {"#9467bd", "8,3,2,3"}, {"#ff7f0e", "12,4"}, {"#8c564b", "4,4"},
}

// scale maps data values to a pixel range, linearly or on log10.
type scale struct {
	lo, hi float64 // data range (log10 of it when log)
	log    bool
	p0, p1 float64 // pixel range
}

func (s scale) at(v float64) float64 {
	if s.log {
		v = math.Log10(v)
	}
	f := 0.5
	if s.hi > s.lo {
		f = (v - s.lo) / (s.hi - s.lo)
	}
	return s.p0 + f*(s.p1-s.p0)
}

// bounds is the range to draw for vs: whole decades on a log scale, from zero with some room
// on a linear one.
func bounds(vs []float64, log bool) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		if log {
			v = math.Log10(v)
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	if log {
		lo, hi = math.Floor(lo), math.Ceil(hi)
		if hi == lo {
			hi = lo + 1
		}
		return lo, hi
	}
	if hi <= 0 {
		hi = 1
	}
	return 0, hi * 1.1
}

// ticks are the values to mark between lo and hi (log10 of them on a log scale).
func ticks(lo, hi float64, log bool) []float64 {
	var out []float64
	if log {
		for e := lo; e <= hi+1e-9; e++ {
			out = append(out, math.Pow(10, e))
		}
		return out
	}
	step := math.Pow(10, math.Floor(math.Log10(hi/5)))
	for _, m := range []float64{1, 2, 5, 10} {
		if hi/(step*m) <= 6 {
			step *= m
			break
		}
	}
	for v := 0.0; v <= hi+1e-9; v += step {
		out = append(out, v)
	}
	return out
}

// label writes v briefly (1k, 10k, 1G, 2.5); the axis label gives the unit.
func label(v float64) string {
	switch {
	case v >= 1e9 && math.Mod(v, 1e9) == 0:
		return fmt.Sprintf("%gG", v/1e9)
	case v >= 1e6 && math.Mod(v, 1e6) == 0:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3 && math.Mod(v, 1e3) == 0:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", math.Round(v*1000)/1000)
}

// write writes the chart as a standalone SVG document. A chart with no point, or a point
// that a log scale cannot show (zero, negative, not a number), is an error.
func (c chart) write(w io.Writer) error {
	var xs, ys []float64
	for _, s := range c.series {
		for _, p := range s.points {
			for _, v := range []struct {
				v   float64
				log bool
				ax  string
			}{{p.x, c.xLog, "x"}, {p.y, c.yLog, "y"}} {
				if math.IsNaN(v.v) || math.IsInf(v.v, 0) || (v.log && v.v <= 0) {
					return fmt.Errorf("chart %q: series %q: %s = %v cannot be drawn", c.title, s.name, v.ax, v.v)
				}
			}
			xs, ys = append(xs, p.x), append(ys, p.y)
		}
	}
	if len(xs) == 0 {
		return fmt.Errorf("chart %q: no points", c.title)
	}
	xTicks := c.xTicks
	if len(xTicks) == 0 {
		xTicks = xs
	}
	// The x axis spans the ticks and points exactly, with a margin so that no point sits on
	// the frame.
	xlo, xhi := math.Inf(1), math.Inf(-1)
	for _, v := range append(append([]float64(nil), xs...), xTicks...) {
		if c.xLog {
			v = math.Log10(v)
		}
		xlo, xhi = min(xlo, v), max(xhi, v)
	}
	margin := (xhi - xlo) * 0.05
	if margin == 0 {
		margin = 1
	}
	xlo, xhi = xlo-margin, xhi+margin
	ylo, yhi := bounds(ys, c.yLog)
	sx := scale{lo: xlo, hi: xhi, log: c.xLog, p0: padLeft, p1: padLeft + plotWidth}
	sy := scale{lo: ylo, hi: yhi, log: c.yLog, p0: padTop + plotHeight, p1: padTop}

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" style="%s">`+"\n",
		svgWidth, svgHeight, svgWidth, svgHeight, font)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", svgWidth, svgHeight)
	fmt.Fprintf(&b, `<text x="%d" y="22" style="font-size:15px;font-weight:bold">%s</text>`+"\n", padLeft, html.EscapeString(c.title))

	// Grid and ticks.
	for _, t := range ticks(ylo, yhi, c.yLog) {
		y := sy.at(t)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`+"\n", padLeft, y, padLeft+plotWidth, y, gridColour)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", padLeft-6, y+4, label(t))
	}
	for _, t := range xTicks {
		x := sx.at(t)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", x, padTop, x, padTop+plotHeight, gridColour)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x, padTop+plotHeight+18, label(t))
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="%s"/>`+"\n", padLeft, padTop, plotWidth, plotHeight, axisColour)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", padLeft+plotWidth/2, svgHeight-15, html.EscapeString(c.xLabel))
	fmt.Fprintf(&b, `<text transform="translate(18,%d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", padTop+plotHeight/2, html.EscapeString(c.yLabel))

	// Lines, their points, and the legend.
	for i, s := range c.series {
		st := palette[i%len(palette)]
		dash := ""
		if st.dash != "" {
			dash = fmt.Sprintf(` stroke-dasharray="%s"`, st.dash)
		}
		var pts []string
		for _, p := range s.points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", sx.at(p.x), sy.at(p.y)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", st.colour, dash, strings.Join(pts, " "))
		for _, p := range s.points {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", sx.at(p.x), sy.at(p.y), st.colour)
		}
		ly := padTop + 10 + 22*i
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", legendX, ly, legendX+24, ly, st.colour, dash)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", legendX+30, ly+4, html.EscapeString(s.name))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
