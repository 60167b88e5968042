// Package console is flightd's web console (--http-listen): a few pages in
// the browser that list the tables a caller may read, show each table's
// snapshot timeline, the changes of any window with the before- and
// after-images side by side and the changed cells highlighted, and paint
// each new commit's changes as it lands.
//
// The console reads through the Flight service itself: its Options.Client
// is a Sluice client whose connection, in flightd, never leaves the
// process, and every call it makes carries the browser caller's bearer
// token. The service's interceptors authenticate that call, apply its
// grants and its limits, and log it, exactly as for a call from the
// network: the console holds no privilege of its own.
//
// Authentication is that of the gRPC side: a caller sends a bearer token
// (the Authorization header), or logs in with HTTP basic authentication,
// which the browser prompts for: a user and password of the users file
// (mode basic), or the user name "token" and a static token as the
// password (mode token). The console then keeps the bearer token in an
// HTTP-only session cookie. With authentication on, nothing is served to
// a caller without valid credentials, not even the page's assets.
//
// Before any of that, the console answers only its own names (Hosts): a
// request whose Host is another name, as a page of an attacker's site
// resolved again to the console's address (DNS rebinding) sends, is
// refused with 421, and one from another site's page (its Origin) with
// 403. flightd guards its metrics and profiles the same way.
//
// The assets (HTML, CSS, JavaScript) are embedded in the binary; the page
// loads nothing from the network but its own server.
package console
