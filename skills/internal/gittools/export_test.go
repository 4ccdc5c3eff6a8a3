package gittools

import (
	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Filesystems returns the work tree and .git file systems that the
// tools hand go-git for the repository at o.Dir; done releases them.
func Filesystems(o Options) (wt, dot billy.Filesystem, done func(), err error) {
	repo, done, err := o.open()
	if err != nil {
		return nil, nil, nil, err
	}
	w, err := repo.Worktree()
	if err != nil {
		done()
		return nil, nil, nil, err
	}
	return w.Filesystem, repo.Storer.(*filesystem.Storage).Filesystem(), done, nil
}
