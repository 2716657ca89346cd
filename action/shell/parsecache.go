package shell

import (
	"container/list"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// The syntax trees of recent commands are kept, so that a command reviewed again (a retry,
// the review at the execution boundary, the same command in another session) is not parsed
// again. A tree depends on the text alone; the analysis, which looks at the file system, is
// never kept. The walk only reads a tree, so one tree may be walked by many analyses at once.
//
// The bounds keep the cache small whatever is reviewed: trees of at most parseCacheSize
// commands, each at most parseCacheMaxSource bytes long (a tree takes some tens of times its
// text's size).
const (
	parseCacheSize      = 256
	parseCacheMaxSource = 2 << 10
)

// parseCache is a least-recently-used map from source text to its syntax tree. It is safe for
// concurrent use.
type parseCache struct {
	mu    sync.Mutex
	order *list.List // of *cachedTree, most recently used first
	trees map[string]*list.Element
}

type cachedTree struct {
	src string
	f   *syntax.File
}

var trees = &parseCache{order: list.New(), trees: map[string]*list.Element{}}

// get returns the tree kept for src, if any.
func (c *parseCache) get(src string) (*syntax.File, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.trees[src]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*cachedTree).f, true
}

// put keeps f as the tree of src, forgetting the least recently used tree past the bound.
func (c *parseCache) put(src string, f *syntax.File) {
	if len(src) > parseCacheMaxSource {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.trees[src]; ok {
		c.order.MoveToFront(e)
		return
	}
	c.trees[src] = c.order.PushFront(&cachedTree{src: src, f: f})
	if c.order.Len() > parseCacheSize {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.trees, last.Value.(*cachedTree).src)
	}
}

// len reports how many trees are kept.
func (c *parseCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// reset forgets every tree.
func (c *parseCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order.Init()
	clear(c.trees)
}
