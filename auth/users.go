package auth

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/crypto/bcrypt"
)

// UsersFile is the format of Config.UsersFile.
type UsersFile struct {
	// Users are the users of the basic-auth Handshake.
	Users []UserEntry `yaml:"users"`
}

// UserEntry is one user.
type UserEntry struct {
	// Name is the user name, which is also its principal name.
	Name string `yaml:"name"`
	// Bcrypt is the bcrypt hash of the password (HashPassword).
	Bcrypt string `yaml:"bcrypt"`
}

// PasswordCost is the bcrypt cost of HashPassword: bcrypt's default, about
// 50 ms of CPU per Handshake. The users file accepts hashes of any cost up
// to MaxPasswordCost.
const PasswordCost = bcrypt.DefaultCost

// MaxPasswordCost is the highest bcrypt cost the users file accepts: each
// step doubles the time of every Handshake.
const MaxPasswordCost = 16

// HashPassword returns the bcrypt hash of a password, the form in which the
// users file stores it. Passwords longer than 72 bytes are refused (bcrypt
// ignores what follows).
func HashPassword(password string) (string, error) {
	return hashPassword(password, PasswordCost)
}

func hashPassword(password string, cost int) (string, error) {
	if password == "" {
		return "", errors.New("auth: empty password")
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), cost)
	if err != nil {
		return "", fmt.Errorf("auth: hash password: %w", err)
	}
	return string(h), nil
}

// users are the users of a users file. They are immutable but for the
// semaphore.
type users struct {
	hashes map[string][]byte
	// dummy is compared against for unknown users, so that the time taken
	// does not tell which user names exist. Its cost is the highest of the
	// file's.
	dummy []byte
	// sem bounds the bcrypt comparisons running at once: each one costs
	// tens of milliseconds of CPU, so a flood of handshakes would otherwise
	// starve the server.
	sem chan struct{}
}

// loadUsers reads and checks a users file.
func loadUsers(path string) (*users, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: users file: %v", ErrInvalidConfig, err)
	}
	us, err := parseUsers(data)
	if err != nil {
		return nil, fmt.Errorf("%w: users file %s: %v", ErrInvalidConfig, path, err)
	}
	return us, nil
}

func parseUsers(data []byte) (*users, error) {
	var f UsersFile
	if err := decodeStrict(data, &f); err != nil {
		return nil, err
	}
	us := &users{hashes: make(map[string][]byte, len(f.Users)), sem: make(chan struct{}, runtime.GOMAXPROCS(0))}
	maxCost := bcrypt.MinCost
	for i, u := range f.Users {
		if u.Name == "" || len(u.Name) > maxNameLen {
			return nil, fmt.Errorf("user %d: name of %d bytes: want 1 to %d", i+1, len(u.Name), maxNameLen)
		}
		if _, dup := us.hashes[u.Name]; dup {
			return nil, fmt.Errorf("user %q: listed twice", u.Name)
		}
		cost, err := bcrypt.Cost([]byte(u.Bcrypt))
		if err != nil {
			return nil, fmt.Errorf("user %q: not a bcrypt hash: %v", u.Name, err)
		}
		if cost > MaxPasswordCost {
			return nil, fmt.Errorf("user %q: bcrypt cost %d is above %d", u.Name, cost, MaxPasswordCost)
		}
		maxCost = max(maxCost, cost)
		us.hashes[u.Name] = []byte(u.Bcrypt)
	}
	dummy, err := bcrypt.GenerateFromPassword([]byte("sluice: no such user"), maxCost)
	if err != nil {
		return nil, fmt.Errorf("dummy hash: %v", err)
	}
	us.dummy = dummy
	return us, nil
}

// verify reports whether password is user's. It waits for a free bcrypt
// slot, or for ctx.
func (us *users) verify(ctx context.Context, user, password string) (bool, error) {
	select {
	case us.sem <- struct{}{}:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	defer func() { <-us.sem }()
	hash, known := us.hashes[user]
	if !known {
		hash = us.dummy
	}
	ok := bcrypt.CompareHashAndPassword(hash, []byte(password)) == nil
	return ok && known, nil
}
