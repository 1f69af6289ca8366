package shard

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestInitialMap(t *testing.T) {
	l, err := New(servers(4), 8, 3, 0)
	require.NoError(t, err)
	m := Initial(l, 0)
	require.NoError(t, m.Validate())
	require.Equal(t, uint64(1), m.Epoch)
	require.Equal(t, servers(4)[:3], m.Meta)
	for s := range 8 {
		var want []string
		for _, i := range l.Replicas(s) {
			want = append(want, servers(4)[i])
		}
		require.Equal(t, want, m.Replicas(s))
	}
	for i, srv := range servers(4) {
		require.Equal(t, l.Hosted(i), m.Hosted(srv))
	}
}

// TestMapValidate: each broken map is refused with a reason.
func TestMapValidate(t *testing.T) {
	l, err := New(servers(4), 4, 3, 0)
	require.NoError(t, err)
	for name, breakIt := range map[string]func(m *Map){
		"epoch 0":          func(m *Map) { m.Epoch = 0 },
		"short placement":  func(m *Map) { m.Placement = m.Placement[:3] },
		"replica twice":    func(m *Map) { m.Placement[1][2] = m.Placement[1][0] },
		"not a member":     func(m *Map) { m.Placement[2][1] = "10.9.9.9:1" },
		"too few replicas": func(m *Map) { m.Placement[0] = m.Placement[0][:2] },
		"member twice":     func(m *Map) { m.Servers = append(m.Servers, m.Servers[0]) },
		"meta not member":  func(m *Map) { m.Meta[0] = "10.9.9.9:1" },
	} {
		m := Initial(l, 0)
		breakIt(m)
		require.Error(t, m.Validate(), name)
	}
}

// TestMapCloneAndWire: a clone shares nothing with its original, and a
// map survives the trip through the wire type.
func TestMapCloneAndWire(t *testing.T) {
	l, err := New(servers(3), 3, 3, 0)
	require.NoError(t, err)
	m := Initial(l, 0)
	c := m.Clone()
	c.Placement[0][0], c.Meta[0], c.Servers[0] = "x", "y", "z"
	require.Equal(t, servers(3)[0], m.Placement[0][0])
	require.Equal(t, servers(3)[0], m.Meta[0])
	require.Equal(t, servers(3)[0], m.Servers[0])
	back, err := FromWire(m.Wire())
	require.NoError(t, err)
	require.Equal(t, m, back)
	w := m.Wire()
	w.Placement[1] = nil
	_, err = FromWire(w)
	require.Error(t, err)
}
