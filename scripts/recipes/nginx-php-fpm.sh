#!/bin/sh
# nginx -> php-fpm on loopback for `udsprobe --compare` (docs/RECIPES.md): php-fpm with one pool
# on the unix socket UNIX and one on 127.0.0.1:PORT, nginx on 127.0.0.1:PORT2 passing /unix/ to
# the first and /tcp/ to the second (a new FastCGI connection per request: nginx's default).
# Both stay in the foreground in this script's process group, so udsprobe stops them together.
#
#   nginx-php-fpm.sh DIR UNIX PORT PORT2
set -eu
[ $# -eq 4 ] || { echo "usage: nginx-php-fpm.sh DIR UNIX PORT PORT2" >&2; exit 2; }
dir=$1 unix=$2 port=$3 port2=$4
here=$(cd "$(dirname "$0")" && pwd)
fpm=$(command -v php-fpm8.2 || command -v php-fpm || ls /usr/sbin/php-fpm* 2>/dev/null | head -n1)
ngx=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$fpm" ] || { echo "nginx-php-fpm.sh: php-fpm not found (apt-get install php-fpm)" >&2; exit 1; }
[ -x "$ngx" ] || { echo "nginx-php-fpm.sh: nginx not found (apt-get install nginx)" >&2; exit 1; }

# the page: tests/backlog/slow.php with ?us=0 answers "ok" at once
cp "$here/../../tests/backlog/slow.php" "$dir/hello.php"
chmod 644 "$dir/hello.php"
mkdir -p "$dir/ngx"

cat > "$dir/php-fpm.conf" <<CONF
[global]
pid = $dir/php-fpm.pid
error_log = $dir/php-fpm.log
daemonize = no

[unix]
user = nobody
group = nogroup
listen = $unix
listen.mode = 0666
pm = static
pm.max_children = 2

[tcp]
user = nobody
group = nogroup
listen = 127.0.0.1:$port
pm = static
pm.max_children = 2
CONF

cat > "$dir/nginx.conf" <<CONF
daemon off;
master_process on;
worker_processes 1;
user nobody nogroup;
pid $dir/nginx.pid;
error_log $dir/nginx-error.log error;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path $dir/ngx/body;
	fastcgi_temp_path $dir/ngx/fastcgi;
	proxy_temp_path $dir/ngx/proxy;
	uwsgi_temp_path $dir/ngx/uwsgi;
	scgi_temp_path $dir/ngx/scgi;
	server {
		listen 127.0.0.1:$port2;
		location /unix/ {
			fastcgi_pass unix:$unix;
			fastcgi_param SCRIPT_FILENAME $dir/hello.php;
			fastcgi_param REQUEST_METHOD \$request_method;
			fastcgi_param QUERY_STRING \$query_string;
		}
		location /tcp/ {
			fastcgi_pass 127.0.0.1:$port;
			fastcgi_param SCRIPT_FILENAME $dir/hello.php;
			fastcgi_param REQUEST_METHOD \$request_method;
			fastcgi_param QUERY_STRING \$query_string;
		}
	}
}
CONF

"$fpm" -F -R -y "$dir/php-fpm.conf" &
exec "$ngx" -c "$dir/nginx.conf" -p "$dir"
