// Package plotstest checks figures written by package plots, in tests.
package plotstest

import (
	"image"
	"image/png"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot/vg"

	"github.com/batchkv/batchkv/internal/plots"
)

// RequirePNG checks that path holds a PNG of w×h at plots.DPI and returns
// the decoded image.
func RequirePNG(t *testing.T, path string, w, h vg.Length) image.Image {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err, path)
	require.Equal(t, int(w/vg.Inch*plots.DPI+0.5), img.Bounds().Dx(), path)
	require.Equal(t, int(h/vg.Inch*plots.DPI+0.5), img.Bounds().Dy(), path)
	return img
}
