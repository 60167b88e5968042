package storage

// Azure blobs are read through the container client itself, not gocloud's
// azureblob: that escapes the characters ", #, %, ? and \ of a key (a key
// "p=a%20b/x" is read as "p=a__0x25__20b/x"), so it cannot read a blob
// whose name has them as Delta's writers write it (a partition value's
// escapes, delta-rs's "test%file%prefix-" data files).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	azblobblob "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// isNotFound reports whether err is an object (or, for Azure, anything)
// that is not found.
func isNotFound(err error) bool {
	if gcerrors.Code(err) == gcerrors.NotFound || errors.Is(err, fs.ErrNotExist) {
		return true
	}
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == 404
}

// errBackslash is the error of an Azure key with a backslash: Azure reads
// it as a slash, so the key would name another blob.
var errBackslash = fmt.Errorf("%w: Azure takes a backslash in a blob name for a slash", fs.ErrNotExist)

// attributes returns the size and time of the object key.
func (f *FS) attributes(ctx context.Context, key string) (int64, time.Time, error) {
	if c := f.st.az; c != nil {
		if strings.Contains(key, `\`) {
			return 0, time.Time{}, errBackslash
		}
		p, err := c.NewBlobClient(key).GetProperties(ctx, nil)
		if err != nil {
			return 0, time.Time{}, err
		}
		var size int64
		var mod time.Time
		if p.ContentLength != nil {
			size = *p.ContentLength
		}
		if p.LastModified != nil {
			mod = *p.LastModified
		}
		return size, mod, nil
	}
	attrs, err := f.st.b.Attributes(ctx, key)
	if err != nil {
		return 0, time.Time{}, err
	}
	return attrs.Size, attrs.ModTime, nil
}

// listPage returns the first n objects under prefix (no delimiter).
func (f *FS) listPage(ctx context.Context, prefix string, n int) ([]*blob.ListObject, error) {
	if f.st.az != nil {
		return azList(ctx, f.st.az, prefix, "", n)
	}
	objs, _, err := f.st.b.ListPage(ctx, blob.FirstPageToken, n, &blob.ListOptions{Prefix: prefix})
	return objs, err
}

// listDir returns the objects and folders right under prefix. On S3, with
// after set, the listing starts after the key prefix+after (S3's
// start-after); other stores list every object and folder under prefix.
func (f *FS) listDir(ctx context.Context, prefix, after string) ([]*blob.ListObject, error) {
	if f.st.az != nil {
		return azList(ctx, f.st.az, prefix, "/", 0)
	}
	var out []*blob.ListObject
	opts := &blob.ListOptions{Prefix: prefix, Delimiter: "/"}
	if after != "" && f.st.s3 != nil {
		opts.BeforeList = func(as func(any) bool) error {
			var in *s3.ListObjectsV2Input
			if as(&in) {
				in.StartAfter = aws.String(prefix + after)
			}
			return nil
		}
	}
	it := f.st.b.List(opts)
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
}

// rangeReader reads n bytes of key from off (n < 0: to the end).
func (f *FS) rangeReader(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if c := f.st.az; c != nil {
		if strings.Contains(key, `\`) {
			return nil, errBackslash
		}
		count := n
		if count < 0 {
			count = 0 // Azure's HTTPRange: 0 is to the end
		}
		resp, err := c.NewBlobClient(key).DownloadStream(ctx, &azblobblob.DownloadStreamOptions{
			Range: azblobblob.HTTPRange{Offset: off, Count: count}})
		if err != nil {
			return nil, err
		}
		return resp.Body, nil
	}
	return f.st.b.NewRangeReader(ctx, key, off, n, nil)
}

// azList lists prefix in the container: with a delimiter, its objects and
// folders; max > 0: at most max of them.
func azList(ctx context.Context, c *container.Client, prefix, delimiter string, max int) ([]*blob.ListObject, error) {
	var out []*blob.ListObject
	add := func(items []*container.BlobItem) {
		for _, b := range items {
			if b.Name == nil {
				continue
			}
			o := &blob.ListObject{Key: *b.Name}
			if p := b.Properties; p != nil {
				if p.ContentLength != nil {
					o.Size = *p.ContentLength
				}
				if p.LastModified != nil {
					o.ModTime = *p.LastModified
				}
			}
			out = append(out, o)
		}
	}
	var pageSize *int32
	if max > 0 {
		m := int32(min(max, 5000))
		pageSize = &m
	}
	full := func() bool { return max > 0 && len(out) >= max }
	if delimiter == "" {
		pager := c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix, MaxResults: pageSize})
		for pager.More() && !full() {
			resp, err := pager.NextPage(ctx)
			if err != nil {
				return nil, err
			}
			if resp.Segment != nil {
				add(resp.Segment.BlobItems)
			}
		}
	} else {
		pager := c.NewListBlobsHierarchyPager(delimiter, &container.ListBlobsHierarchyOptions{Prefix: &prefix,
			MaxResults: pageSize})
		for pager.More() && !full() {
			resp, err := pager.NextPage(ctx)
			if err != nil {
				return nil, err
			}
			if resp.Segment == nil {
				continue
			}
			for _, p := range resp.Segment.BlobPrefixes {
				if p.Name != nil {
					out = append(out, &blob.ListObject{Key: *p.Name, IsDir: true})
				}
			}
			add(resp.Segment.BlobItems)
		}
	}
	if max > 0 && len(out) > max {
		out = out[:max]
	}
	return out, nil
}
