package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/kusionpr/kusionpr/model"
)

// cancelDir holds, beside the releases, the requests that a running release
// stop: one create-only object per revision, so the first request stands
// and the holder's own writes of the release never erase it. Kusion reads
// only releases/, so it never sees them.
const cancelDir = "kusionpr-cancels"

// NothingRunningError is the error of cancelling a stack no release holds.
type NothingRunningError struct {
	Project, Workspace string
	// Latest is the latest release, nil when there is none.
	Latest *model.Release
}

func (e *NothingRunningError) Error() string {
	if e.Latest == nil {
		return fmt.Sprintf("nothing is running on %s/%s: it has no release", e.Project, e.Workspace)
	}
	return fmt.Sprintf("nothing is running on %s/%s: the latest release, %d, is %s", e.Project, e.Workspace, e.Latest.Revision, e.Latest.Phase)
}

func (s *Store) cancelKey(project, workspace string, revision uint64) string {
	return s.prefix + cancelDir + "/" + project + "/" + workspace + "/" + strconv.FormatUint(revision, 10)
}

// RequestCancel asks the running release of a project's workspace to
// stop, recording who asks and why; the holder sees it at its next
// heartbeat (HeartbeatInterval) and ends the release itself, so the release
// records what was applied. It returns the release asked and the request
// that stands: an earlier one, if another asked first. A stack with no
// running release is a *NothingRunningError.
func (s *Store) RequestCancel(ctx context.Context, project, workspace, who, why string) (*model.Release, *model.Cancel, error) {
	return s.RequestCancelIf(ctx, project, workspace, who, why, nil)
}

// RequestCancelIf is RequestCancel that first asks cond about the latest
// release; an error of cond is returned as it is and nothing is written.
func (s *Store) RequestCancelIf(ctx context.Context, project, workspace, who, why string, cond func(latest *model.Release) error) (*model.Release, *model.Cancel, error) {
	if strings.TrimSpace(who) == "" {
		return nil, nil, fmt.Errorf("cancel %s/%s: say who cancels: it is recorded in the release", project, workspace)
	}
	latest, err := s.Latest(ctx, project, workspace)
	if err == nil && cond != nil {
		err = cond(latest)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("cancel %s/%s: %w", project, workspace, err)
	}
	if latest == nil || latest.Phase.Ended() {
		return latest, nil, &NothingRunningError{Project: project, Workspace: workspace, Latest: latest}
	}
	c := &model.Cancel{Revision: latest.Revision, By: who, At: s.now(), Reason: strings.TrimSpace(why)}
	data, err := json.Marshal(c)
	if err != nil {
		return nil, nil, err
	}
	key := s.cancelKey(project, workspace, latest.Revision)
	err = s.obj.write(ctx, key, data, true)
	if errors.Is(err, errObjectExists) {
		earlier, rerr := s.CancelRequest(ctx, project, workspace, latest.Revision)
		if rerr == nil && earlier == nil {
			rerr = fmt.Errorf("%s exists but could not be read back", key)
		}
		if rerr != nil {
			return nil, nil, fmt.Errorf("cancel %s/%s: read the earlier request: %w", project, workspace, rerr)
		}
		return latest, earlier, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("cancel %s/%s: write %s: %w", project, workspace, key, err)
	}
	return latest, c, nil
}

// CancelRequest returns the request that revision stop, nil when none was
// made.
func (s *Store) CancelRequest(ctx context.Context, project, workspace string, revision uint64) (*model.Cancel, error) {
	if err := validNames(project, workspace); err != nil {
		return nil, err
	}
	key := s.cancelKey(project, workspace, revision)
	data, err := s.readObject(ctx, key, 64<<10, "cancel request")
	if errors.Is(err, errObjectMissing) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	c := &model.Cancel{}
	if err := json.Unmarshal(data, c); err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	if c.Revision != revision || strings.TrimSpace(c.By) == "" {
		return nil, fmt.Errorf("read %s: not a cancel request of revision %d", key, revision)
	}
	return c, nil
}
