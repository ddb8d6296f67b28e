package githubapi

import "github.com/google/go-github/v60/github"

// eachPage reads a list GitHub pages: page is asked for the first page of
// perPage items, then for the next one GitHub's Link header names, until
// it names none or page says it has read enough.
func eachPage(perPage int, page func(github.ListOptions) (resp *github.Response, enough bool, err error)) error {
	lo := github.ListOptions{PerPage: perPage}
	for {
		resp, enough, err := page(lo)
		if err != nil || enough || resp == nil || resp.NextPage == 0 {
			return err
		}
		lo.Page = resp.NextPage
	}
}
