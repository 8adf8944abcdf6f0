<?php
// A slow request: every php-fpm worker stays busy, so the listen queue fills.
usleep(isset($_GET['us']) ? (int)$_GET['us'] : 200000);
echo "ok\n";
