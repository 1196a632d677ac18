package eval

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// CheckOutputs validates what Write put into dir for the figures that
// ran: every CSV file parses with its header, every plot exists as a PNG
// that decodes (and is not one flat color) and an SVG, every one of
// variants has a figure 9 row, and the x values of each series (attack
// rate, file size, time) ascend. It checks shape, never figures.
func CheckOutputs(dir string, variants []Variant, skip []string) error {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	skipped := func(fig string) bool { return slices.Contains(skip, fig) }

	read := func(name string, header ...string) [][]string {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			fail("%v", err)
			return nil
		}
		defer f.Close()
		rows, err := csv.NewReader(f).ReadAll()
		if err != nil {
			fail("%s: %v", name, err)
			return nil
		}
		if len(rows) < 2 {
			fail("%s: no data rows", name)
			return nil
		}
		for _, h := range header {
			if !slices.Contains(rows[0], h) {
				fail("%s: no column %q in %v", name, h, rows[0])
				return nil
			}
		}
		return rows
	}
	col := func(rows [][]string, name string) int { return slices.Index(rows[0], name) }
	// ascending checks that, within each group, the x column ascends.
	ascending := func(file string, rows [][]string, group, x string) {
		if rows == nil {
			return
		}
		g, xi := col(rows, group), col(rows, x)
		last := map[string]float64{}
		for i, r := range rows[1:] {
			v, err := strconv.ParseFloat(r[xi], 64)
			if err != nil {
				fail("%s row %d: %s %q is not a number", file, i+1, x, r[xi])
				continue
			}
			key := ""
			if g >= 0 {
				key = r[g]
			}
			if p, ok := last[key]; ok && v < p {
				fail("%s row %d: %s %v after %v: not ascending", file, i+1, x, v, p)
			}
			last[key] = v
		}
	}
	plot := func(name string) {
		b, err := os.ReadFile(filepath.Join(dir, name+".png"))
		if err != nil {
			fail("%v", err)
		} else if img, err := png.Decode(bytes.NewReader(b)); err != nil {
			fail("%s.png: %v", name, err)
		} else {
			colors := map[[4]uint32]bool{}
			r := img.Bounds()
			for y := r.Min.Y; y < r.Max.Y && len(colors) < 3; y += 3 {
				for x := r.Min.X; x < r.Max.X && len(colors) < 3; x += 3 {
					c0, c1, c2, c3 := img.At(x, y).RGBA()
					colors[[4]uint32{c0, c1, c2, c3}] = true
				}
			}
			if len(colors) < 3 {
				fail("%s.png: a blank image", name)
			}
		}
		s, err := os.ReadFile(filepath.Join(dir, name+".svg"))
		if err != nil {
			fail("%v", err)
		} else if !bytes.Contains(s, []byte("<svg")) {
			fail("%s.svg: not an SVG", name)
		}
	}

	if !skipped("9") {
		rows := read(FileMaxRate, "variant", "median_max_kpps")
		if rows != nil {
			have := map[string]bool{}
			for _, r := range rows[1:] {
				have[r[col(rows, "variant")]] = true
			}
			for _, v := range variants {
				if !have[string(v)] {
					fail("%s: no row for variant %s", FileMaxRate, v)
				}
			}
		}
		read(FileSteps, "variant", "target_pps", "sent_pps", "sustained")
		read(FileRuns, "variant", "max_kpps")
		read(FileGenerator, "mode", "sent_mpps")
		ascending(FileSetup, read(FileSetup, "variant", "target_kpps", "setup_p50_ms"), "variant", "target_kpps")
		ascending(FileCPU, read(FileCPU, "variant", "target_kpps", "host_cores"), "variant", "target_kpps")
		for _, p := range []string{"fig9_max_rate", "fig10_setup_latency", "fig12_cpu"} {
			plot(p)
		}
	}
	if !skipped("11") {
		rows := read(FileTransfer, "variant", "attack_kpps", "size_bytes", "transfer_mean_ms")
		if rows != nil {
			// Sizes ascend within each variant and attack rate.
			g := make([][]string, 0, len(rows))
			g = append(g, append(slices.Clone(rows[0]), "group"))
			for _, r := range rows[1:] {
				g = append(g, append(slices.Clone(r), r[col(rows, "variant")]+"@"+r[col(rows, "attack_kpps")]))
			}
			ascending(FileTransfer, g, "group", "size_bytes")
		}
		read(FileOverhead, "size", "normalized_overhead")
		plot("fig11_transfer")
	}
	if !skipped("13") {
		ascending(FileFailOpen, read(FileFailOpen, "t_s", "setup_ms", "after_kill"), "", "t_s")
		plot("fig13_failopen")
	}
	if _, err := os.Stat(filepath.Join(dir, FileSummary)); err != nil {
		fail("%v", err)
	}
	return errors.Join(errs...)
}
